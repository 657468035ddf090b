"""Request limits: the API contract's bounds, kept in one place.

Every limit here is documented in the README and enforced by the public service with a 413
whose message names the limit, so that a client can split its work instead of guessing.
"""

from __future__ import annotations

# A request is one HTTP body; the whole body is read into memory before parsing (BentoML has no
# limit of its own), so this bound is what protects the API workers' memory.
MAX_BODY_BYTES = 4 * 1024 * 1024

# After an early refusal (413, 415, 429) the rest of the body is still arriving. Closing then makes
# the kernel answer it with a reset, and clients that send the whole body before reading (Python's
# urllib) see "connection reset" instead of the answer. So the server keeps reading and discarding
# ("lingering close", as nginx and Apache do) until the body ends, the client goes, or one of these
# bounds is reached; then it closes. Nothing read is kept.
LINGER_MAX_BYTES = 64 * 1024 * 1024
LINGER_MAX_SECONDS = 30.0
# A client silent this long is not sending a body any more (e.g. one that sent Expect: 100-continue
# and got its answer instead).
LINGER_IDLE_SECONDS = 5.0

# Records and characters are bounded separately from bytes: one enormous record monopolises the
# model for minutes, and many tiny records cost a piece each.
MAX_RECORDS_PER_REQUEST = 1024
MAX_CHARS_PER_RECORD = 20_000
MAX_CHARS_PER_REQUEST = 500_000

# Sentences longer than this are cut into chunks before translation. M2M100 was trained on
# sentences, quality falls off on long inputs, and a SentencePiece token never covers less than
# one character, so this also keeps every piece far below the model's 1024 source positions.
MAX_PIECE_CHARS = 400
