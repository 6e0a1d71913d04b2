"""The NBD servers of this directory's scripts, started and stopped exactly as bench/compare
starts them (its Server class: diskgate --cache direct|writeback --sync full, qemu-nbd
--cache=none --aio=io_uring, nbdkit's file plugin), over a Unix socket beside the file."""
import contextlib, os, runpy, types

COMPARE = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                      "compare"), run_name="bench_compare")
warm_page_cache = COMPARE["warm_page_cache"]


@contextlib.contextmanager
def served(kind, args, diskgate, path):
    """Serves path with bench/compare's Server(kind, args); yields the NBD URI to give fio;
    stops the server when the block is left, on an error too."""
    opts = types.SimpleNamespace(dir=os.path.dirname(os.path.abspath(path)), file=path,
                                 diskgate=diskgate, diskgate_args="")
    srv = COMPARE["Server"](kind, args, opts)
    try:
        yield srv.uri
    finally:
        srv.stop()
