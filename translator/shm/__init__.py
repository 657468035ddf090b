"""What the processes of one server share through memory (/dev/shm), beside the HTTP calls between
them: runtime mechanism, not agreements (those are in `translator.contract`). One primitive,
`records` (a server's files of fixed-size records, each stamped with the process that wrote it),
and the three mechanisms built on it: the API workers' shared count of requests in flight
(`in_flight`), each engine process's record of itself (`engine_process`) and its published
forecast (`engine_load`). Both the API and the engine room import this one; it imports neither.
"""
