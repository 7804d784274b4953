# Shared by the benchmarks that serve a store they projected (sourced, not
# run): `serve_store DATA_DIR` starts `query-api serve` on it (no scheduled
# snapshots) and sets `address` (its public listener) and `key` (a
# production key with bulk:read and a limit no benchmark reaches). The
# server is stopped, and `work_directory` removed, when the script exits.
# A script that sources it sets `work_directory` and `query_api` first.
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$work_directory"
}
trap cleanup EXIT

serve_store() {
    local data="$1"
    "$query_api" serve --data-dir "$data" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
        --snapshot-interval-minutes 0 >"$work_directory/serve.txt" 2>/dev/null &
    server_pid=$!
    for _ in $(seq 1 600); do
        grep -q '^listening' "$work_directory/serve.txt" && break
        sleep 0.05
    done
    address=$(sed -n 's/^listening public=\([^ ]*\).*/\1/p' "$work_directory/serve.txt")
    key=$("$query_api" keys --data-dir "$data" issue --partner bench --scopes bulk:read --rate-limit 100000000 2>/dev/null)
}
