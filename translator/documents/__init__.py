"""Document translation: files read into text units, translated through the same pipeline as
`POST /translation`, and written back with everything outside the text unchanged."""
