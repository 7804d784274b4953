"""An OAI-PMH harvester, Sickle, against the service's /oai endpoint,
keyless as a harvester that cannot set headers.

`full`: harvests every record (ListRecords, following resumption tokens)
and prints the identifiers of the live and deleted records.
`since FROM`: harvests the headers changed from FROM on (ListIdentifiers)
and prints the same.
"""

import json
import sys

from sickle import Sickle
from sickle.oaiexceptions import NoRecordsMatch


def main():
    base_url, mode = sys.argv[1], sys.argv[2]
    sickle = Sickle(base_url, max_retries=0, timeout=60)
    identify = sickle.Identify()
    assert identify.protocolVersion == "2.0", identify.protocolVersion
    assert identify.deletedRecord == "transient", identify.deletedRecord
    live, deleted, titled = [], [], 0
    try:
        if mode == "full":
            for record in sickle.ListRecords(metadataPrefix="oai_dc", ignore_deleted=False):
                if record.deleted:
                    deleted.append(record.header.identifier)
                else:
                    live.append(record.header.identifier)
                    titled += bool(record.metadata.get("title"))
        else:
            for header in sickle.ListIdentifiers(metadataPrefix="oai_dc", ignore_deleted=False, **{"from": sys.argv[3]}):
                (deleted if header.deleted else live).append(header.identifier)
    except NoRecordsMatch:
        pass
    print(json.dumps({"live": sorted(live), "deleted": sorted(deleted), "titled": titled}))


if __name__ == "__main__":
    main()
