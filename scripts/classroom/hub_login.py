"""The test hub's authenticator: NativeAuthenticator, logging in through
JupyterHub's own login page.

NativeAuthenticator (``jupyterhub-nativeauthenticator`` 1.3.0, its latest
release) keeps the hub's table of names and bcrypt-hashed passwords, its
sign-up page and its approval rules, all of which this class keeps. Its own
``/login`` handler does not run on JupyterHub 6: it calls ``self.statsd``,
which JupyterHub 6 removed, so every login answers 500. This class serves
``/login`` with JupyterHub's own handler instead, which asks the same
``authenticate()`` (approved name, right password) and answers a refusal
with 403 and "Invalid username or password", whoever is refused, so a
stranger learns nothing about which names exist.

The hub imports this module (scripts/ is put on its path by the config that
scripts/classroom_check.py writes).
"""
from __future__ import annotations

from jupyterhub.handlers.login import LoginHandler
from nativeauthenticator import NativeAuthenticator


class ClassAuthenticator(NativeAuthenticator):
    """NativeAuthenticator with JupyterHub's own login handler."""

    def get_handlers(self, app):
        return [(path, LoginHandler if path == r"/login" else handler)
                for path, handler in super().get_handlers(app)]
