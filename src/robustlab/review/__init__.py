"""The review web app: people judge (anchor, neighbour) frame pairs in rounds; the result is a pm-k set.

Modules, in the order data flows:

- :mod:`.tasks`: read and check the TASKS file (``review_tasks.jsonl`` of ``robustlab video sample``);
- :mod:`.schema`: the database's tables and prebuilt statements;
- :mod:`.answers`: what the database hands out (users, answers, where an annotator stands) and
  its refusals (an answer for another round, or made on an older version);
- :mod:`.database`: users, sessions, answers and their versions, round state and its log, on
  SQLite or PostgreSQL;
- :mod:`.security`: argon2 password hashes, signed cookies, CSRF tokens, the login rate limit;
- :mod:`.frames`: frames resized for the page (at most 200 KB a pair);
- :mod:`.rounds`: round-2 pairs, joint decisions (finalize's own rule), agreement (kappa), admin
  tables, how each round closed;
- :mod:`.service`: the review's rules between the routes and the database;
- :mod:`.web`: what every route shares (sessions tied to the browser that logged in, CSRF,
  headers, errors); :mod:`.annotator`: the annotator's routes; :mod:`.app`: the FastAPI app
  (login, frames, admin); :mod:`.server`: start-up checks, users, export;
- :mod:`.demo`: the embedded demo's video set (``serve --demo``); :mod:`.cli`: ``robustlab review``.

Nothing heavy is imported here: ``robustlab --help`` stays fast. See docs/review.md.
"""
