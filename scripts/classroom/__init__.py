"""Parts of scripts/classroom_check.py, the classroom load test:

- ``hub``: the test hub on 127.0.0.1, its API, and a learner reaching a
  chapter through its JupyterHub link (pong_experiment.py starts it too);
- ``accounts``: who may use the test hub (its login, its learners' system
  accounts) and the checks that it refuses everyone else;
- ``kernel``: a learner's notebook, opened and run as JupyterLab does,
  reconnecting its kernel's websocket as JupyterLab does;
- ``evidence``: the machine's load and the servers' websocket events, with
  times, for the report.
"""
