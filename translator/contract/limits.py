"""Request limits: the API contract's bounds, kept in one place.

Every limit here is documented in the README and enforced by the public service with a 413
whose message names the limit, so that a client can split its work instead of guessing.
"""

from __future__ import annotations

# A request is one HTTP body; the whole body is read into memory before parsing (BentoML has no
# limit of its own), so this bound is what protects the API workers' memory.
MAX_BODY_BYTES = 4 * 1024 * 1024
# The whole body must arrive within this many seconds of the request's headers, else 408: a
# client trickling bytes holds a connection (never an admission slot) for no longer. 4 MiB at
# 1 Mbit/s takes 34 s.
BODY_TIMEOUT_S = 60.0
# Bodies are read before their request is admitted (a slow upload must not hold an admission
# slot), so the bytes they may take while arriving are bounded apart, per API worker: the bytes
# received of the bodies being read, each counted as it arrives (a declared Content-Length that
# would not fit is refused before reading); beyond this, 429. Counted as declared instead, 200
# connections that sent headers for 4 MiB bodies and nothing more kept everyone else out for 60 s.
MAX_ARRIVING_BODY_BYTES = 64 * MAX_BODY_BYTES
# Each part of an answer must be taken by the client within this many seconds; the admission slot
# was given back when the answer was ready (a client that never read a 3 MB answer kept its slot for
# as long as it kept the connection open). Past it, the request stays in its API worker until the
# client goes, since closing would not free the unread bytes (uvicorn's close waits for them to
# leave): their bytes are counted, and past MAX_UNTAKEN_ANSWER_BYTES per worker new requests get 429.
SEND_TIMEOUT_S = 60.0
MAX_UNTAKEN_ANSWER_BYTES = 64 * MAX_BODY_BYTES
# A request refused from the engine's forecast (translator/shm/engine_load.py) gets its 503
# after this long (or its Retry-After, if sooner): a client that ignores Retry-After and sends again
# at once would otherwise spin, taking the API workers' CPU from the model however cheap each
# refusal is. Held, it costs an open connection and no CPU; past HELD_REFUSALS_MAX such
# connections per worker the rest are answered at once.
REFUSAL_HOLD_S = 1.0
HELD_REFUSALS_MAX = 512
# An idle keep-alive connection is closed by the server after this many seconds (`bentoml serve
# --timeout-keep-alive`; uvicorn's default is 5). A client reusing a connection at the moment the
# server closes it sees it dropped without an answer, and no client resends a POST by itself: with
# 5 s, an open-loop overload on 2 busy cores lost 16-58 of 6,000 requests that way every round
# (aiohttp keeps idle connections 15 s, a busy client takes seconds to reuse one). The server must
# outlast whatever pools connections in front of it: aiohttp 15 s, ingress-nginx and AWS load
# balancers 60 s, Go's clients 90 s, Google Cloud's load balancers 600 s (they ask for more). An
# idle connection costs a socket and a few KB. Makefile (`make serve`), deploy/image/Dockerfile.j2
# (the image's CMD) and harness/servers.py pass it; tests/deploy/test_bento.py holds them equal.
KEEP_ALIVE_S = 620


# Records and characters are bounded separately from bytes: one enormous record monopolises the
# model for minutes, and many tiny records cost a piece each.
MAX_RECORDS_PER_REQUEST = 1024
MAX_CHARS_PER_RECORD = 20_000
MAX_CHARS_PER_REQUEST = 500_000

# Sentences longer than this are cut into chunks before translation. M2M100 was trained on
# sentences, quality falls off on long inputs, and a SentencePiece token never covers less than
# one character, so this also keeps every piece far below the model's 1024 source positions.
MAX_PIECE_CHARS = 400

# Alternatives (n-best) a record may ask for: each widens the beam search of its sentences.
MAX_ALTERNATIVES = 3
# Element names a request may keep inline (`keepTags`, DeepL's `ignore_tags`).
MAX_KEEP_TAGS = 32
