"""The HTTP contract's request and response models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from translator import limits

EXAMPLE_TEXT = "Life is like a box of chocolates."


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Opaque identifier, echoed back with the translation.")
    text: str = Field(
        description=f"Text to translate: any length up to {limits.MAX_CHARS_PER_RECORD} characters, "
        "several sentences and paragraphs; whitespace and line breaks are kept."
    )


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_lang: str = Field(
        alias="fromLang",
        description="Source language code, e.g. 'en' (GET /languages), or 'auto': each record's language is "
        "detected and answered as its `detectedLang`.",
    )
    to_lang: str = Field(alias="toLang", description="Target language code, e.g. 'ja'.")
    records: list[Record] = Field(
        description=f"Records to translate, at most {limits.MAX_RECORDS_PER_REQUEST} per request."
    )
    fallback_lang: str | None = Field(
        default=None,
        alias="fallbackLang",
        description="With fromLang 'auto': the language of records whose language cannot be detected with "
        "confidence (or is one the model lacks); they are translated from it and answered with detectedLang "
        "'und'. Without it such records fail the request with 400.",
    )


class TranslatedRecord(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    id: str
    text: str
    # Only in answers to fromLang 'auto': absent otherwise, so the contract is unchanged.
    detected_lang: str | None = Field(
        default=None,
        alias="detectedLang",
        exclude_if=lambda value: value is None,
        description="With fromLang 'auto': the language detected for this record, or 'und' when it was not "
        "determined and the record was translated from fallbackLang.",
    )


class TranslationResult(BaseModel):
    result: list[TranslatedRecord]


EXAMPLE_PAYLOAD = Payload(fromLang="en", toLang="ja", records=[Record(id="123", text=EXAMPLE_TEXT)])


class Piece(BaseModel):
    """One sentence (or chunk of one) on its way from the API service to the engine."""

    text: str
    source: str
    target: str


# PieceResult.error_kind of a piece whose translation did not end within the model's limit, even
# with all of it and cut in parts: the request fails with 422 rather than return a cut text.
TRUNCATED = "truncated"


class PieceResult(BaseModel):
    """The engine's answer for one piece: a translation, or why that piece alone failed."""

    text: str | None = None
    error: str | None = None
    error_kind: str | None = None


class EngineRefusal(BaseModel):
    """Why the engine did not take a request: refused at admission, never after waiting."""

    reason: str
    message: str
    retry_after_s: float


class EngineReply(BaseModel):
    """The engine's answer to one request: a result per piece in order, or a refusal."""

    results: list[PieceResult] = Field(default_factory=list)
    refused: EngineRefusal | None = None
