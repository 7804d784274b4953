"""Reads what rights-sync wrote with DuckDB, as an analyst would: the SQLite
copy through DuckDB's sqlite_scanner extension (the official build, shipped
on PyPI as duckdb-extension-sqlite-scanner, since DuckDB cannot download it
here) and the Parquet copy directly.

    python3 read_copy.py COPY.sqlite WORKS.parquet

Prints {"sqliteRows": N, "parquetRows": M, "sameWorks": bool, "openForLicensing": K}.
"""

import glob
import json
import os
import sys

import duckdb
import duckdb_extension_sqlite_scanner

sqlite_copy, parquet_copy = sys.argv[1], sys.argv[2]
extension = glob.glob(
    os.path.join(os.path.dirname(duckdb_extension_sqlite_scanner.__file__), "extensions", "*", "*.duckdb_extension")
)[0]
connection = duckdb.connect()
connection.execute(f"LOAD '{extension}'")
sqlite_rows = connection.execute(f"SELECT count(*) FROM sqlite_scan('{sqlite_copy}', 'works')").fetchone()[0]
parquet_rows = connection.execute(f"SELECT count(*) FROM read_parquet('{parquet_copy}')").fetchone()[0]
differing = connection.execute(
    f"SELECT count(*) FROM (SELECT lcc_id FROM sqlite_scan('{sqlite_copy}', 'works') "
    f"EXCEPT SELECT lccId FROM read_parquet('{parquet_copy}'))"
).fetchone()[0]
open_for_licensing = connection.execute(
    f"SELECT count(*) FROM sqlite_scan('{sqlite_copy}', 'works') WHERE open_for_licensing = 1"
).fetchone()[0]
print(
    json.dumps(
        {
            "sqliteRows": sqlite_rows,
            "parquetRows": parquet_rows,
            "sameWorks": differing == 0 and sqlite_rows == parquet_rows,
            "openForLicensing": open_for_licensing,
        }
    )
)
