"""What runs in the API workers (several async processes): the edge middleware (size limit,
admission, lingering close), routes, request options, the request pipeline (validate, detect,
split, rejoin) and the client of the engine with its gate. Never imports `translator.engine`.
"""
