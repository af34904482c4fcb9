"""Helpers shared by the benchmarks' report scripts (bench/p2p, bench/coll)."""
import statistics


def machine(path):
    """The "# machine:" line of a raw file (benchlib.sh's bench_machine), for every table."""
    for line in open(path):
        if line.startswith("# machine: "):
            return line[len("# machine: "):].strip()
    return "unknown processor"


def human(n):
    """8, 64K, 1M: sizes as the tables and plots label them."""
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return "%dM" % (n >> 20)
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return "%dK" % (n >> 10)
    return str(n)


def med(vals, key):
    """The median of the runs measured for key, or None."""
    v = vals.get(key)
    return statistics.median(v) if v else None


def ratio(a, b):
    return "%.2f" % (a / b) if a is not None and b else "-"
