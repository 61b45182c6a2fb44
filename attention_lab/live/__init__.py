"""A live class, without Streamlit: :mod:`.store` keeps it (SQLite by default, Redis for replicas), :mod:`.classes`
is what a class is (join codes, teacher keys, questions graded from core's numbers, tallies, the export).
The page is ``app_pages/live_class.py``; the session side (a seat in a class, following the teacher) is ``ui/live.py``."""
