"""``grade lti``: keys, register, serve, courses, push (docs/lti.md). Each a plain ``main`` a script can call."""
from __future__ import annotations

import json
from pathlib import Path

from autograder import console
from autograder.lti import keys as tool_keys, require
from autograder.lti.store import Platform, Store
from autograder.usage import UsageError


def _store(store_dir: Path | None):
    require()

    return Store(store_dir)


def keys(store_dir: Path | None = None, url: str | None = None, rotate: bool = False) -> int:
    """Make the tool's key pair once (or again with ``rotate``); print its JWKS and the LMS form's values."""
    store = _store(store_dir)
    path = store.private_key_path
    if path.exists() and not rotate:
        tool_keys.check_private_key(path)
        console.note(f"the tool's key pair exists ({path}, mode 600): kept; --rotate makes a new one")
    else:
        tool_keys.make_private_key(path)
        console.note(f"wrote the tool's private key to {path} (mode 600; never printed, never leave it in a "
                     "repository)")
    if url:
        store.set_tool(base_url=url.rstrip("/"))
    base = store.tool("base_url")
    out = {"jwks": tool_keys.jwks(path)}
    if base:
        out.update(tool_keys.endpoints(base))
    else:
        console.note("give --url https://your-grader.example.edu (the public address of grade lti serve) to print "
                     "the login, launch and JWKS URLs")
    console.say(json.dumps(out, indent=2))
    if base:
        e = tool_keys.endpoints(base)
        console.note("paste into the LMS: Canvas developer key (LTI key): Target Link URI and Redirect URIs "
                     f"{e['launch_url']}, OpenID Connect Initiation URL {e['login_url']}, Public JWK URL "
                     f"{e['jwks_url']}; Moodle external tool: Tool URL and Redirection URI(s) {e['launch_url']}, "
                     f"Initiate login URL {e['login_url']}, Public key type 'Keyset URL' {e['jwks_url']}")
    return 0


def register(store_dir: Path | None, issuer: str, client_id: str, login_url: str, token_url: str, jwks_url: str,
             deployment_ids: tuple[str, ...], audience: str | None = None) -> int:
    """Record a platform (what the LMS shows once the tool is added) and its deployments."""
    if not deployment_ids:
        raise UsageError("give at least one --deployment-id (Canvas: the developer key's deployment id in the "
                         "course's or account's Apps settings; Moodle: the tool's Deployment ID)")
    for name, url in (("--login-url", login_url), ("--token-url", token_url), ("--jwks-url", jwks_url)):
        if not url.startswith(("https://", "http://")):
            raise UsageError(f"{name} {url}: not a URL")
    store = _store(store_dir)
    store.add_platform(Platform(issuer, client_id, login_url, token_url, audience, jwks_url), list(deployment_ids))
    console.note(f"registered {issuer} (client id {client_id}), deployments "
                 f"{', '.join(store.deployments(issuer, client_id))}: now launch the tool once from each course")
    return 0


def serve(store_dir: Path | None, host: str, port: int, url: str | None,
          idle_timeout: int | None = None) -> int:
    from autograder.lti import server

    store = _store(store_dir)
    if not store.private_key_path.exists():
        raise UsageError(f"no tool key in {store.dir}: run grade lti keys first")
    if not store.platforms():
        console.warn("no platform registered yet: every login is refused until grade lti register")
    server.serve(store, host, port, url or store.tool("base_url"), idle_timeout=idle_timeout)
    return 0


def courses(store_dir: Path | None) -> int:
    store = _store(store_dir)
    known = store.courses()
    if not known:
        console.note(f"no course launched yet ({store.dir}): launch the tool once from the LMS course while "
                     "grade lti serve runs")
    for c in known:
        services = ", ".join(s for s, ok in (("AGS", c.lineitems_url), ("NRPS", c.memberships_url)) if ok) or "none"
        console.say(f"{c.name}\t{c.context_title}\t{c.issuer}\tdeployment {c.deployment_id}\tservices: {services}\t"
                    f"launched {c.launched_at}")
    return 0


def _lms_course_named_as_course(store, course_file: Path) -> None:
    """``--course ATT101`` where ATT101 is a launched LMS course and no file: said in one line, with the option meant
    (``--course`` is course.yml in every verb; the LMS course is ``--lms-course``)."""
    if Path(course_file).exists() or Path(course_file).suffix in (".yml", ".yaml"):
        return
    if str(course_file) in {c.name for c in store.courses()}:
        raise UsageError(f"--course {course_file}: no such file; --course names the course definition (course.yml), "
                         f"as in every verb: the LMS course is --lms-course {course_file}")


def push(results_dir: Path, course: str, store_dir: Path | None = None, course_file: Path = Path("course.yml"),
         match: str | None = None, resource_id: str | None = None, label: str | None = None,
         dry_run: bool = False, ungraded: str = "blank") -> int:
    """``course``: the LMS course (``--lms-course``); ``course_file``: course.yml (``--course``); ``ungraded``:
    ``blank`` posts nothing for a hand-in the kit never graded and no person decided, ``zero`` posts the kit's score."""
    from autograder.lti import push as pushing

    store = _store(store_dir)
    _lms_course_named_as_course(store, course_file)
    try:
        summary = pushing.push(store, course, results_dir, course_file, match=match, resource_id=resource_id,
                               label=label, dry_run=dry_run, say=console.say, ungraded=ungraded)
    except pushing.Interrupted as exc:
        for line in exc.summary.lines():
            console.note(line)
        console.warn(str(exc))
        return 130
    for line in summary.notes:
        console.warn(line)
    for line in summary.lines():
        console.note(line)
    return 1 if summary.refused else 0
