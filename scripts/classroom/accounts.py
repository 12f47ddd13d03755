"""Who may use the test hub, and the checks that it refuses everyone else.

The login is NativeAuthenticator's (``jupyterhub-nativeauthenticator``,
requirements-classroom.txt): the hub keeps its own table of names and
bcrypt-hashed passwords. Anyone may fill in the sign-up form, but only the
names on the hub's allowed list are approved when they sign up; any other
name waits for an admin, who here never approves it. A login needs an
approved name and its own password. So the hub refuses:

- a stranger, a name that never signed up;
- a stranger who signed up (not on the list, never approved), even with the
  password they chose;
- a learner's name with a wrong password.

Each is answered alike: HTTP 403, the login page again, "Invalid username or
password" (scripts/classroom/hub_login.py).
Each learner signs up with a password of their own, then logs in with it,
as they would on the class's hub. ``refusals()`` tries the three and checks
that each lands back on the login page with its error, with no login cookie
and no access to the hub's pages.

When the test runs as root (a container, CI), every learner's server runs as
a system account of its own, created here for the run and removed after it
(``useradd``/``userdel``): JupyterHub's ``LocalProcessSpawner`` starts each
server as its learner, as a hub on a school's server does, so no server runs
as root and no server needs ``--allow-root``. Not as root, every server runs
as the user who runs the test (``SimpleLocalProcessSpawner``).
"""
from __future__ import annotations

import os
import pwd
import re
import secrets
import shlex
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlencode, urljoin, urlsplit

from tornado.httpclient import HTTPRequest

# the comment (GECOS) field of the system accounts this script creates
ACCOUNT_MARK = "mhacourse classroom-check"
# JupyterHub's login cookie: set on a good login only
LOGIN_COOKIE = "jupyterhub-hub-login"
STRANGER = "stranger"
# what JupyterHub's login page says, with HTTP 403, to every refused login
REFUSAL = "Invalid username or password"


def needs_system_accounts() -> bool:
    """Root may not run a learner's server without ``--allow-root``: it
    starts each as the learner's own account instead."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def authenticator_config(names: list[str]) -> str:
    """The hub's login settings (lines of jupyterhub_config.py)."""
    return "\n".join([
        f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})",
        # NativeAuthenticator, logging in through JupyterHub's own page (hub_login.py)
        'c.JupyterHub.authenticator_class = "classroom.hub_login.ClassAuthenticator"',
        # approved at sign-up: the class list; anyone else waits for an admin
        f"c.Authenticator.allowed_users = {set(names)!r}",
        "c.Authenticator.allow_all = False",
        "c.NativeAuthenticator.open_signup = False",
        "c.NativeAuthenticator.minimum_password_length = 12",
        "c.NativeAuthenticator.check_common_password = True",
        # a login that fails 5 times in a row waits 10 minutes
        "c.NativeAuthenticator.allowed_failed_logins = 5",
        "c.NativeAuthenticator.seconds_before_next_try = 600",
    ]) + "\n"


def spawner_config(tmp: Path) -> str:
    """The hub's spawner settings: as root, each learner's own system account."""
    if needs_system_accounts():
        return 'c.JupyterHub.spawner_class = "localprocess"\n'
    return (f'c.JupyterHub.spawner_class = "simple"\n'
            f'c.SimpleLocalProcessSpawner.home_dir_template = '
            f'{str(tmp / "home")!r} + "/{{username}}"\n')


def new_passwords(names: list[str]) -> dict[str, str]:
    return {n: secrets.token_urlsafe(18) for n in names}


# --------------------------------------------------------------------------
# System accounts (only as root)
# --------------------------------------------------------------------------

def _ours(name: str) -> bool | None:
    """True: an account this script made; False: someone else's; None: none."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return entry.pw_gecos.startswith(ACCOUNT_MARK)


def create_accounts(names: list[str], home: Path, run_id: str) -> None:
    """A system account per learner, home ``home/<name>`` (mode 700), no
    login shell; one left by an earlier run that was killed is replaced.
    Refuses to touch an account it did not make."""
    if not needs_system_accounts():
        for n in names:
            (home / n).mkdir(parents=True, exist_ok=True)
        return
    if shutil.which("useradd") is None:
        raise RuntimeError("running as root needs useradd/userdel (package passwd) to give "
                           "each learner an account of their own")
    for n in names:
        mine = _ours(n)
        if mine is False:
            raise RuntimeError(f"a system account {n!r} exists and was not made by this "
                               "script: run the check where no such account exists")
        if mine:
            subprocess.run(["userdel", n], check=True, capture_output=True)
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o755)
    for parent in (home.parent,):          # the run's folder: others may pass through
        parent.chmod(0o711)
    for n in names:
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                        "--home-dir", str(home / n), "--shell", "/usr/sbin/nologin",
                        "--comment", f"{ACCOUNT_MARK} {run_id}", n],
                       check=True, capture_output=True)
        entry = pwd.getpwnam(n)
        (home / n).mkdir(exist_ok=True)
        os.chown(home / n, entry.pw_uid, entry.pw_gid)
        (home / n).chmod(0o700)


def remove_accounts(names: list[str]) -> list[str]:
    """Remove the accounts this script made; returns those still there."""
    if not needs_system_accounts():
        return []
    for n in names:
        if _ours(n):
            subprocess.run(["userdel", n], capture_output=True)
    return [n for n in names if _ours(n) is not None and _ours(n)]


def _closed_folder(path: Path) -> tuple[Path, Path] | None:
    """The first folder above ``path`` that other accounts may not pass
    through, and its child on the way to ``path``; None if there is none."""
    parts = [*reversed(path.parents), path]
    for folder, child in zip(parts, parts[1:]):
        if not folder.stat().st_mode & 0o001:
            return folder, child
    return None


def private_view(tmp: Path, python: Path) -> list[str]:
    """The command that starts the hub where the learners' accounts can run
    Python, as a prefix of the hub's command ([] when nothing is needed).

    The servers run the same Python as this script. Where that Python lives
    in a folder no other account may enter (a root user's ``/root/.pyenv``:
    ``/root`` is mode 700), the hub runs in a mount namespace of its own
    (``unshare --mount``), where that folder is replaced by an empty one that
    others may pass through (mode 711), holding only the Python folder. The
    hub, its proxy, the servers and the kernels see that view; the machine's
    own ``/root`` is not changed, and the view goes away with the hub."""
    if not needs_system_accounts():
        return []
    closed = _closed_folder(Path(os.path.realpath(python)))
    if closed is None:
        return []
    folder, child = closed
    if shutil.which("unshare") is None:
        raise RuntimeError(f"{python} is under {folder}, which the learners' accounts may not "
                           "enter; running as root needs unshare (util-linux) to show them it")
    keep = tmp / "python-folder"
    keep.mkdir()
    child_, keep_, folder_ = (shlex.quote(str(p)) for p in (child, keep, folder))
    script = (f"set -e; mount --bind {child_} {keep_}; "
              f"mount -t tmpfs -o mode=0711,size=1m classroom-check {folder_}; "
              f"mkdir {child_}; mount --move {keep_} {child_}; exec \"$@\"")
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"]


def leftover_accounts(names: list[str]) -> list[str]:
    return [n for n in names if _ours(n)] if needs_system_accounts() else []


def chown_tree(path: Path, name: str) -> None:
    """Give ``path`` (a folder made for the learner) to their account."""
    if not needs_system_accounts():
        return
    entry = pwd.getpwnam(name)
    for p in [path, *path.rglob("*")]:
        os.chown(p, entry.pw_uid, entry.pw_gid, follow_symlinks=False)


# --------------------------------------------------------------------------
# A browser, and the hub's sign-up and login pages
# --------------------------------------------------------------------------

class Browser:
    """A learner's browser, as far as the hub cares: a cookie jar, redirects
    followed one by one (the hub's login, then the OAuth dance between the
    hub and the learner's server)."""

    def __init__(self, http, base: str):
        self.http, self.base, self.cookies = http, base, {}

    async def fetch(self, url: str, method: str = "GET", body: str | None = None,
                    hops: int = 15):
        for _ in range(hops):
            headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
            if body is not None:
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            resp = await self.http.fetch(HTTPRequest(
                url, method=method, body=body, headers=headers, follow_redirects=False,
                request_timeout=300), raise_error=False)
            for c in resp.headers.get_list("Set-Cookie"):
                name, _, rest = c.partition("=")
                value = rest.split(";")[0]
                if "max-age=0" in c.lower() or "expires=thu, 01 jan 1970" in c.lower():
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = value
            if resp.code in (301, 302, 303, 307):
                url = urljoin(url, resp.headers["Location"])
                method, body = "GET", None
                continue
            return resp, url
        raise RuntimeError(f"more than {hops} redirects from {url}")

    async def form(self, page: str, fields: dict, next_url: str = ""):
        """GET the hub's ``page`` (for its XSRF token), then POST ``fields``."""
        query = f"?{urlencode({'next': next_url})}" if next_url else ""
        resp, _ = await self.fetch(f"{self.base}{page}{query}")
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', resp.body.decode(errors="replace"))
        if xsrf:
            fields = {**fields, "_xsrf": xsrf.group(1)}
        return await self.fetch(f"{self.base}{page}{query}", "POST", urlencode(fields))


def page_alert(body: bytes) -> str:
    """The message the hub's login page (its login error) or sign-up page
    (its result) shows, in one line; "" if none."""
    text = body.decode(errors="replace")
    for pattern in (r'<p class="login_error">(.*?)</p>',
                    r'<div class="alert alert-[a-z]+" role="alert">(.*?)</div>'):
        m = re.search(pattern, text, re.S)
        if m:
            return " ".join(re.sub(r"<[^>]+>", " ", m.group(1)).split())
    return ""


async def sign_up(browser: Browser, name: str, password: str) -> str:
    """Fill in the hub's sign-up form; returns the page's message."""
    resp, _ = await browser.form("/hub/signup", {
        "username": name, "signup_password": password,
        "signup_password_confirmation": password})
    if resp.code != 200:
        raise RuntimeError(f"sign-up of {name}: HTTP {resp.code}")
    return page_alert(resp.body)


async def log_in(browser: Browser, name: str, password: str, next_url: str = ""):
    """Fill in the hub's login form; returns (response, where it landed)."""
    return await browser.form("/hub/login", {"username": name, "password": password},
                              next_url)


async def refused(http, base: str, who: str, name: str, password: str,
                  sign_up_first: bool = False) -> dict:
    """One login that must fail, in a fresh browser: it must land back on
    the login page with an error, set no login cookie, and leave the hub's
    home page and the learner's server closed to that browser."""
    browser = Browser(http, base)
    signed_up = await sign_up(browser, name, password) if sign_up_first else None
    resp, landed = await log_in(browser, name, password, f"/user/{name}/lab")
    home, home_landed = await browser.fetch(f"{base}/hub/home")
    server, server_landed = await browser.fetch(f"{base}/user/{name}/api/status")
    result = {
        "who": who, "name": name, "signed_up": signed_up,
        "status": resp.code, "landed": urlsplit(landed).path, "message": page_alert(resp.body),
        "login_cookie": LOGIN_COOKIE in browser.cookies,
        "hub_home": urlsplit(home_landed).path,
        "server_status": server.code, "server_landed": urlsplit(server_landed).path,
    }
    result["refused"] = (result["status"] == 403 and result["landed"] == "/hub/login"
                         and result["message"] == REFUSAL
                         and not result["login_cookie"]
                         and result["hub_home"] == "/hub/login"
                         and (server.code in (401, 403)
                              or urlsplit(server_landed).path == "/hub/login"))
    return result


async def refusals(http, base: str, learner: str) -> list[dict]:
    """A stranger, a stranger who signed up, and a learner's wrong password."""
    wrong = secrets.token_urlsafe(18)
    return [
        await refused(http, base, "a stranger (never signed up)", STRANGER, wrong),
        await refused(http, base, "a stranger who signed up (never approved)",
                      f"{STRANGER}2", secrets.token_urlsafe(18), sign_up_first=True),
        await refused(http, base, "a learner's name with a wrong password", learner, wrong),
    ]
