"""The review web app: people judge (anchor, neighbour) frame pairs in rounds; the result is a pm-k set.

Modules, in the order data flows:

- :mod:`.tasks`: read and check the TASKS file (``review_tasks.jsonl`` of ``robustlab video sample``);
- :mod:`.database`: users, sessions, answers and round state on SQLite or PostgreSQL;
- :mod:`.security`: argon2 password hashes, signed cookies, CSRF tokens, the login rate limit;
- :mod:`.frames`: frames resized for the page (at most 200 KB a pair);
- :mod:`.rounds`: round-2 pairs, joint decisions (finalize's own rule), agreement (kappa), admin tables;
- :mod:`.service`: the review's rules between the routes and the database;
- :mod:`.app`: the FastAPI app (pages, frames, admin); :mod:`.server`: start-up checks, users, export;
- :mod:`.demo`: the embedded demo's video set (``serve --demo``); :mod:`.cli`: ``robustlab review``.

Nothing heavy is imported here: ``robustlab --help`` stays fast. See docs/review.md.
"""
