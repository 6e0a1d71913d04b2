# SPDX-License-Identifier: MIT
"""libnbd_helpers.py: small helpers over python3-libnbd shared by the shell-driven tests
(tests/server, tests/durability): connect with chosen strictness, errno names, and the check
that a call fails with a server error reply."""
import errno
import nbd


def connect(uri, strict=None, sr=True):
    """A libnbd handle connected to uri. strict: libnbd strict-mode flags (0 = send anything,
    so the server, not libnbd, has to refuse bad requests); sr: request structured replies."""
    h = nbd.NBD()
    h.set_request_structured_replies(sr)
    if strict is not None:
        h.set_strict_mode(strict)
    h.connect_uri(uri)
    return h


def errno_name(e):
    """The errno of an nbd.Error as a name ("EINVAL"): python3-libnbd 1.14 gives the name,
    newer versions the number."""
    return e.errno if isinstance(e.errno, str) else errno.errorcode.get(e.errno, str(e.errno))


def expect_err(want, what, fn, *args, **kw):
    """Calls fn and requires it to fail with an errno in `want` (an int or a tuple)."""
    want = want if isinstance(want, tuple) else (want,)
    names = "/".join(errno.errorcode[w] for w in want)
    try:
        fn(*args, **kw)
    except nbd.Error as e:
        got = errno_name(e)
        assert got in [errno.errorcode[w] for w in want], \
            f"{what}: failed with {got} ({e.string}), expected {names}"
        # libnbd words a server's error reply "command failed"; anything else was refused
        # (or broken) on the client side and proves nothing about the server
        assert "command failed" in e.string, f"{what}: not a server error reply: {e.string}"
        return
    raise AssertionError(f"{what}: succeeded, expected {names}")
