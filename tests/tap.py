"""tests/tap.py — the ok / not ok lines the Python checkers print, which
tests/run.sh counts; `failed` says whether any check failed (the exit
status)."""

passed = failed = 0


def check(cond, what, detail=""):
    """One line for `what`; on failure `detail` says what was found."""
    global passed, failed
    if cond:
        passed += 1
        print(f"ok - {what}")
    else:
        failed += 1
        print(f"not ok - {what}" + (f": {detail}" if detail else ""))
