"""What the two processes agree on, and nothing else: the public HTTP schemas, the
API-to-engine protocol (`Piece`, `EngineReply`, `Priority`), the errors with their status codes, and
the request limits. Both sides import this room; it imports neither.
"""
