"""compare_lib.py: what the bench/compare tests share (compare_rows.py, compare_cells.py,
compare_fio.py): bench/compare loaded as a module (it is a script without .py), and a check
counter that collects failures and reports them at the end."""
import importlib.machinery
import importlib.util
import os
import sys

SRC = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def load_compare(name="bench_compare"):
    """A fresh module object of bench/compare (each call executes the script again)."""
    loader = importlib.machinery.SourceFileLoader(name, os.path.join(SRC, "bench", "compare"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


class Checks:
    """check(name, got, want) records a mismatch; finish(what) prints them and exits 1, or
    prints 'ok: WHAT (N checks)'."""

    def __init__(self):
        self.failures, self.count = [], 0

    def check(self, name, got, want):
        self.count += 1
        if got != want:
            self.failures.append("%s: got %r, expected %r" % (name, got, want))

    def finish(self, what):
        for f in self.failures:
            print("FAIL: " + f, file=sys.stderr)
        if self.failures:
            sys.exit(1)
        print("ok: %s (%d checks)" % (what, self.count))
