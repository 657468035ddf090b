"""Text processing shared by the API side and the engine: sentence segmentation, language
detection, and a record's plan (plan.py: its sentences cut by units.py, its tags and kept spans put
back by placement.py). Imports neither process's room.
"""
