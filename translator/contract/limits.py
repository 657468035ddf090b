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
# slot), so the bytes they may take while arriving are bounded apart, per API worker: each body
# reserves its Content-Length (the byte limit when chunked) until read; beyond this, 429.
MAX_ARRIVING_BODY_BYTES = 64 * MAX_BODY_BYTES
# A request refused from the engine's forecast (translator/contract/engine_load.py) gets its 503
# after this long (or its Retry-After, if sooner): a client that ignores Retry-After and sends again
# at once would otherwise spin, taking the API workers' CPU from the model however cheap each
# refusal is. Held, it costs an open connection and no CPU; past HELD_REFUSALS_MAX such
# connections per worker the rest are answered at once.
REFUSAL_HOLD_S = 1.0
HELD_REFUSALS_MAX = 512


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
