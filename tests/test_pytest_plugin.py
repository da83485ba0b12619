"""The pytest plugin's leak check is on for this suite and opt-in for other projects: each
case runs pytest in a subprocess on a small project of its own."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

_LEAKS_A_THREAD = """
    import threading

    def test_leaks_a_thread():
        threading.Thread(target=threading.Event().wait, args=(5,), daemon=True, name="leaky").start()
"""


def _run(pytester: pytest.Pytester, ini: str, source: str) -> pytest.RunResult:
    pytester.makeini(f"[pytest]\nfilterwarnings = error\n{ini}")
    pytester.makepyfile(source)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")


def test_another_project_s_tests_are_not_checked_by_default(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "", _LEAKS_A_THREAD)
    result.assert_outcomes(passed=1)


def test_the_ini_option_checks_every_test(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "wingman_leak_check = true\n", _LEAKS_A_THREAD)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*left 0 actor(s) and 1 thread(s) running*leaky*"])


def test_the_marker_checks_one_test(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "", """
        import threading, pytest

        @pytest.mark.wingman_leak_check
        def test_checked():
            threading.Thread(target=threading.Event().wait, args=(5,), daemon=True, name="leaky").start()

        def test_unchecked():
            threading.Thread(target=threading.Event().wait, args=(5,), daemon=True, name="other").start()
    """)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_checked*", "*left 0 actor(s) and 1 thread(s)*"])


def test_a_test_using_the_plugin_fixtures_is_checked(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "", """
        import threading

        def test_uses_the_probe(actor_probe):
            threading.Thread(target=threading.Event().wait, args=(5,), daemon=True, name="leaky").start()
    """)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*left 0 actor(s) and 1 thread(s)*"])


def test_allow_leaks_wins_over_the_ini_option(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "wingman_leak_check = true\n", """
        import threading, pytest

        @pytest.mark.wingman_allow_leaks
        def test_allowed():
            threading.Thread(target=threading.Event().wait, args=(5,), daemon=True).start()
    """)
    result.assert_outcomes(passed=1)
