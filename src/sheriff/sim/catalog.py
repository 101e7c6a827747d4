"""The tests a scenario's tree holds: manifests, test paths, flaky tests and failure modes."""

from __future__ import annotations

from dataclasses import dataclass

from sheriff.sim import draws
from sheriff.sim.scenario import Scenario, ScenarioError, Suite

_AREAS = (
    "dom/base",
    "dom/media",
    "dom/events",
    "dom/html",
    "dom/indexedDB",
    "dom/workers",
    "dom/security",
    "dom/serviceworkers",
    "layout/generic",
    "layout/style",
    "gfx/layers",
    "netwerk/cookie",
    "netwerk/protocol/http",
    "js/xpconnect",
    "toolkit/components/places",
    "toolkit/components/extensions",
    "toolkit/components/passwordmgr",
    "toolkit/mozapps/extensions",
    "browser/components/urlbar",
    "browser/components/sessionstore",
    "browser/base/content",
    "browser/components/preferences",
    "browser/components/downloads",
    "widget/cocoa",
    "accessible/tests",
    "security/manager/ssl",
    "editor/libeditor",
    "image/test",
    "devtools/client/inspector",
    "devtools/client/netmonitor",
    "devtools/client/debugger",
    "devtools/client/webconsole",
    "devtools/server/actors",
    "caps/tests",
    "docshell/test",
)
_WPT_AREAS = (
    "css/css-grid",
    "css/css-flexbox",
    "css/selectors",
    "html/semantics",
    "html/browsers",
    "dom/nodes",
    "dom/events",
    "fetch/api",
    "service-workers/service-worker",
    "webrtc",
    "IndexedDB",
    "streams/readable-streams",
    "webdriver/tests/bidi",
    "encoding",
    "url",
    "xhr",
    "websockets",
    "workers",
    "shadow-dom",
    "webaudio/the-audio-api",
)
_WORDS = (
    "focus",
    "resize",
    "scroll",
    "layout",
    "paint",
    "cache",
    "cookie",
    "navigation",
    "history",
    "frame",
    "worker",
    "promise",
    "timer",
    "observer",
    "selection",
    "clipboard",
    "drag",
    "zoom",
    "print",
    "audio",
    "video",
    "canvas",
    "font",
    "image",
    "network",
    "redirect",
    "storage",
    "permission",
    "popup",
    "tab",
    "window",
    "reload",
    "session",
    "tooltip",
    "menu",
    "keyboard",
)


@dataclass(frozen=True, slots=True)
class FailureMode:
    """How one test fails, every time it fails: status, message template, crash or not."""

    status: str
    template: str
    crash_signature: str | None
    # True: the line names no test (a crash between tests, a harness timeout).
    anonymous: bool = False
    # The message's form before this test's fixed values went in: two modes of one form
    # (`Expected 3 but …`, `Expected 7 but …`) are one line once numbers are normalised.
    form: str = ""


@dataclass(frozen=True, slots=True)
class SuiteCatalog:
    """One suite's manifests (in tree order) and the tests of each."""

    suite: Suite
    manifests: tuple[str, ...]
    tests: dict[str, tuple[str, ...]]


class Catalog:
    """Every manifest and test in the simulated tree, and which tests are flaky."""

    def __init__(self, scenario: Scenario) -> None:
        self.seed = scenario.seed
        self.suites = [_suite_catalog(scenario.seed, s) for s in scenario.suites]
        self.manifest_tests: dict[str, tuple[str, ...]] = {}
        for catalog in self.suites:
            self.manifest_tests.update(catalog.tests)
        self.test_manifest = {t: m for m, ts in self.manifest_tests.items() for t in ts}
        flaky = scenario.flakiness
        # Flaky tests per manifest, with each one's chance to fail a run.
        self.flaky: dict[str, list[tuple[str, float]]] = {}
        self.known_bug: dict[str, int] = {}
        for test, manifest in self.test_manifest.items():
            if draws.unit(self.seed, "flaky", test) < flaky.fraction_flaky:
                rate = draws.rng(self.seed, "flake-rate", test).betavariate(
                    flaky.rate.a, flaky.rate.b
                )
                self.flaky.setdefault(manifest, []).append((test, rate))
                if draws.unit(self.seed, "known-bug", test) < flaky.known_bug_fraction:
                    self.known_bug[test] = 1_700_000 + int(draws.unit(self.seed, "bug", test) * 2e5)
        self.flaky_tests = frozenset(t for pairs in self.flaky.values() for t, _ in pairs)
        self._modes: dict[str, FailureMode] = {}
        self.regression_failure = [r.failure for r in scenario.regressions]
        self.regressed: list[dict[str, list[str]]] = []
        every_test = sorted(self.test_manifest)
        for i, regression in enumerate(scenario.regressions):
            if isinstance(regression.tests, list):
                missing = [t for t in regression.tests if t not in self.test_manifest]
                if missing:
                    raise ScenarioError(f"regressions.{i}.tests: no such test {missing[0]}")
                tests = list(regression.tests)
            else:
                count = min(regression.tests, len(every_test))
                tests = draws.rng(self.seed, "regression", i).sample(every_test, count)
            by_manifest: dict[str, list[str]] = {}
            for test in sorted(tests):
                by_manifest.setdefault(self.test_manifest[test], []).append(test)
            self.regressed.append(by_manifest)
        # (regression, test) pairs per manifest, for the hot path of drawing outcomes.
        self.regressed_by_manifest: dict[str, list[tuple[int, str]]] = {}
        for i, by_manifest in enumerate(self.regressed):
            for manifest, tests in by_manifest.items():
                self.regressed_by_manifest.setdefault(manifest, []).extend((i, t) for t in tests)

    def failure_mode(self, test: str) -> FailureMode:
        """The one way this test fails (drawn once from its path)."""
        mode = self._modes.get(test)
        if mode is None:
            mode = self._modes[test] = _draw_mode(self.seed, test)
        return mode

    def failure_of(self, test: str, regression: int | None) -> FailureMode:
        """How `test` fails in a run: its own mode, unless a regression that changes the
        line (`failure: new | crash | timeout`) broke it."""
        kind = "same" if regression is None else self.regression_failure[regression]
        if kind == "same":
            return self.failure_mode(test)
        key = f"{test}#regression-{regression}"
        mode = self._modes.get(key)
        if mode is not None:
            return mode
        if kind == "crash":
            rng = draws.rng(self.seed, "regression-crash", regression)
            signature = f"mozilla::{rng.choice(_CLASSES)}::{rng.choice(_FUNCS)}"
            mode = FailureMode("CRASH", f"application crashed [@ {signature}]", signature, True)
        elif kind == "timeout":
            mode = FailureMode(
                "TIMEOUT", "application timed out after 370 seconds with no output", None, True
            )
        else:
            own = self.failure_mode(test)
            mode = own
            for attempt in range(20):  # another line than the test's own, normalised too
                mode = _draw_mode(self.seed, f"{key}#{attempt}")
                if (mode.status, mode.form) != (own.status, own.form) and not mode.crash_signature:
                    break
        self._modes[key] = mode
        return mode


def _suite_catalog(seed: int, suite: Suite) -> SuiteCatalog:
    rng = draws.rng(seed, "manifests", suite.name)
    wpt = suite.name.startswith("web-platform")
    areas = _WPT_AREAS if wpt else _AREAS
    manifests: list[str] = []
    tests: dict[str, tuple[str, ...]] = {}
    for i in range(suite.manifests):
        area = areas[rng.randrange(len(areas))]
        manifest = _manifest_path(suite.name, area, i)
        names = []
        for j in range(suite.tests_per_manifest):
            word = _WORDS[rng.randrange(len(_WORDS))]
            names.append(_test_path(suite.name, manifest, f"{word}_{i}_{j}"))
        manifests.append(manifest)
        tests[manifest] = tuple(names)
    return SuiteCatalog(suite, tuple(manifests), tests)


def _manifest_path(suite: str, area: str, index: int) -> str:
    if suite.startswith("web-platform"):
        return f"/{area}/sub{index}"
    if suite.startswith("reftest") or suite.startswith("crashtest"):
        return f"{area}/reftests/r{index}/reftest.list"
    if suite.startswith("xpcshell"):
        return f"{area}/test/unit{index}/xpcshell.toml"
    if "browser-chrome" in suite or "devtools" in suite:
        return f"{area}/test/browser{index}/browser.toml"
    if "chrome" in suite:
        return f"{area}/test/chrome{index}/chrome.toml"
    return f"{area}/test/mochitest{index}/mochitest.toml"


def _test_path(suite: str, manifest: str, stem: str) -> str:
    if suite.startswith("web-platform"):
        return f"{manifest}/{stem.replace('_', '-')}.html"
    folder = manifest.rsplit("/", 1)[0]
    if suite.startswith("reftest") or suite.startswith("crashtest"):
        return f"{folder}/{stem.replace('_', '-')}.html"
    if suite.startswith("xpcshell"):
        return f"{folder}/test_{stem}.js"
    if "browser-chrome" in suite or "devtools" in suite:
        return f"{folder}/browser_{stem}.js"
    return f"{folder}/test_{stem}.html"


# Message templates: `{…}` fields vary on every run, so only a normalised line repeats.
_MODES = (
    ("FAIL", "Expected {expected} but got {got} after {ms}ms", None),
    ("FAIL", "Uncaught exception - at {where}:{line} - TypeError: this.{prop} is null", None),
    ("TIMEOUT", "Test timed out after {secs} seconds", None),
    (
        "FAIL",
        "A promise chain failed to handle a rejection: NetworkError when attempting to fetch "
        "http://127.0.0.1:{port}/{prop} - profile at {tmp}",
        None,
    ),
    ("FAIL", "Assertion failure: mState == {prop} (object at 0x{ptr}), took {ms}ms", None),
    ("ERROR", "Test harness error: process {pid} exited with code {code} in {tmp}", None),
    ("CRASH", "application crashed [@ {signature}]", "crash"),
)
_CLASSES = ("BrowsingContext", "Document", "nsFrame", "HttpChannel", "WorkerPrivate", "Element")
_FUNCS = ("Destroy", "Reflow", "OnStopRequest", "Notify", "SetState", "Unbind")


def _draw_mode(seed: int, test: str) -> FailureMode:
    rng = draws.rng(seed, "failure-mode", test)
    status, form, crash = _MODES[rng.randrange(len(_MODES))]
    template = form
    fixed = {
        "expected": str(rng.randrange(1, 20)),
        "where": f"chrome://mochitests/content/{test.rsplit('/', 1)[-1]}",
        "line": str(rng.randrange(10, 400)),
        "prop": rng.choice(_WORDS),
        "code": str(rng.choice((1, 3, 11, 134, 245))),
    }
    signature = None
    if crash:
        signature = f"mozilla::dom::{rng.choice(_CLASSES)}::{rng.choice(_FUNCS)}"
        fixed["signature"] = signature
    for key, value in fixed.items():
        template = template.replace("{" + key + "}", value)
    return FailureMode(status, template, signature, form=form)


def render_message(mode: FailureMode, seed: int, *keys: object) -> str:
    """The failure message of one run: the mode's template with this run's numbers."""
    rng = draws.rng(seed, "message", *keys)
    values = {
        "got": str(rng.randrange(20, 99)),
        "ms": str(rng.randrange(100, 90000)),
        "secs": str(rng.choice((45, 90, 180, 300, 370))),
        "port": str(rng.randrange(20000, 65000)),
        "ptr": f"{rng.getrandbits(48):012x}",
        "tmp": f"/tmp/tmp{rng.getrandbits(40):010x}/profile",
        "pid": str(rng.randrange(1000, 65000)),
    }
    message = mode.template
    for key, value in values.items():
        message = message.replace("{" + key + "}", value)
    return message
