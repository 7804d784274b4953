"""Reading the query API's document cache from a saved /metrics exposition
(its `lcc_document_cache_*` series), for the Python parts of bench-api.sh
and bench-scale.sh."""

PREFIX = "lcc_document_cache_"


def document_cache(path):
    """The cache's series in the exposition saved at `path`, by name without
    the prefix (`hits_total`, `misses_total`, `bytes`, `holds_stored`, ...), as numbers."""
    series = {}
    for line in open(path).read().splitlines():
        if line.startswith(PREFIX):
            name, value = line.split(" ", 1)
            series[name[len(PREFIX):]] = float(value)
    return series
