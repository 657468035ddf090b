"""Text processing shared by the API side and the engine: sentence segmentation and language
detection. Imports neither process's room.
"""
