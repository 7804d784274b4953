"""Calls every operation of the served API through the Python client that
openapi-python-client generated from the served OpenAPI document, with a
sandbox key the client registers itself, and checks each typed result.

    python3 call_every_operation.py GENERATED_PACKAGE_PARENT BASE_URL

BASE_URL is the origin and base path (http://HOST:PORT/api/v1/public/v1).
The generated package is imported as `generated_client`. A result that the
generated models cannot parse raises, and a check that fails exits 1; the
last line names the operations called.
"""

import hashlib
import importlib
import sys

sys.path.insert(0, sys.argv[1])
base_url = sys.argv[2]

client_module = importlib.import_module("generated_client")
models = importlib.import_module("generated_client.models")
from generated_client.api.bulk import (  # noqa: E402
    download_snapshot_file,
    get_snapshot_manifest,
    list_changes,
    list_published_works,
    list_snapshots,
)
from generated_client.api.description import get_open_api_description  # noqa: E402
from generated_client.api.keys import get_signing_keys  # noqa: E402
from generated_client.api.licenses import get_license_status  # noqa: E402
from generated_client.api.metadata import get_metadata, get_provenance  # noqa: E402
from generated_client.api.notifications import list_notifications, list_webhooks  # noqa: E402
from generated_client.api.oai_pmh import oai_pmh, oai_pmh_post  # noqa: E402
from generated_client.api.public_record import get_public_record  # noqa: E402
from generated_client.api.rights import (  # noqa: E402
    find_rights_profiles,
    get_evidence_package,
    get_rights_profile,
    lookup_rights_profiles,
    verify_rights,
)
from generated_client.api.sandbox import list_sandbox_fixtures, register_sandbox_key  # noqa: E402
from generated_client.types import Unset  # noqa: E402

called = []


def answer(operation, response, expected_type, status=200):
    """The parsed answer of one call, checked to be of the generated type."""
    assert response.status_code == status, f"{operation}: {response.status_code} {response.content[:300]!r}"
    parsed = response.parsed
    assert isinstance(parsed, expected_type), f"{operation}: parsed as {type(parsed).__name__}"
    called.append(operation)
    return parsed


anonymous = client_module.Client(base_url=base_url, raise_on_unexpected_status=True)

fixtures = answer("listSandboxFixtures", list_sandbox_fixtures.sync_detailed(client=anonymous), models.FixtureCatalogue)
assert fixtures.count == len(fixtures.fixtures) > 0
works = [fixture for fixture in fixtures.fixtures if fixture.resource.value == "work"]
licenses = [fixture for fixture in fixtures.fixtures if fixture.resource.value == "license"]
by_iswc = next(fixture for fixture in works if isinstance(fixture.iswc, str))
by_isrc = next(fixture for fixture in works if fixture.isrcs)

registration = models.Registration(email="generated-python-client@example.com")
key = answer(
    "registerSandboxKey",
    register_sandbox_key.sync_detailed(client=anonymous, body=registration),
    models.SandboxKey,
    status=201,
)
assert key.key_type == "sandbox" and "rights:read" in key.scopes
client = client_module.AuthenticatedClient(
    base_url=base_url, token=key.api_key, prefix="", auth_header_name="x-api-key", raise_on_unexpected_status=True
)

work_id = by_iswc.id
profile = answer("getRightsProfile", get_rights_profile.sync_detailed(work_id, client=client), models.RightsProfile)
assert profile.lcc_id == work_id and profile.iswc == by_iswc.iswc

found = answer(
    "findRightsProfiles",
    find_rights_profiles.sync_detailed(client=client, isrc=by_isrc.isrcs[0]),
    models.IdentifierLookup,
)
assert [result.lcc_id for result in found.results] == [by_isrc.id], found.results

request = models.LookupRequest(lcc_ids=[work_id, "SANDBOX-LCC-9999"], iswcs=[by_iswc.iswc])
looked_up = answer(
    "lookupRightsProfiles", lookup_rights_profiles.sync_detailed(client=client, body=request), models.LookupResults
)
assert looked_up.count == 3 == len(looked_up.results)

verification = answer("verifyRights", verify_rights.sync_detailed(work_id, client=client), models.VerificationResult)
assert verification.lcc_id == work_id and [check.name for check in verification.checks][0] == "certificate"

license_id = licenses[0].id
status = answer(
    "getLicenseStatus", get_license_status.sync_detailed(license_id, client=client), models.LicenseStatusDocument
)
assert status.license_id == license_id

metadata = answer("getMetadata", get_metadata.sync_detailed(work_id, client=client), models.DublinCoreRecord)
assert metadata.lcc_id == work_id and metadata.title == [profile.title]

provenance = answer("getProvenance", get_provenance.sync_detailed(work_id, client=client), models.Provenance)
assert provenance.entries and provenance.chain.length == len(provenance.entries)

evidence = answer(
    "getEvidencePackage", get_evidence_package.sync_detailed(work_id, client=client), models.EvidencePackage
)
assert evidence.lcc_id == work_id and evidence.signature.count(".") == 2

public_record = answer(
    "getPublicRecord", get_public_record.sync_detailed(work_id, client=anonymous), models.PublicRecord
)
assert evidence.public_lookup_url.endswith(f"/records/{work_id}")
assert public_record.lcc_id == work_id and public_record.audience == "sandbox"
assert public_record.file_sha_256 == evidence.file_sha_256
assert public_record.provenance_chain.hash_ == evidence.provenance_chain.hash_

page = answer("listPublishedWorks", list_published_works.sync_detailed(client=client, limit=5), models.BulkPage)
assert page.total > 0 and 0 < len(page.items) <= 5

changes = answer("listChanges", list_changes.sync_detailed(client=client, limit=5), models.ChangePage)
assert changes.items and changes.next_.startswith("c1.")

notifications = answer(
    "listNotifications", list_notifications.sync_detailed(client=client, limit=1000), models.NotificationPage
)
assert notifications.next_.startswith("n1.")
assert any(item.subject.value == "license" for item in notifications.items), "license statuses are notified"

# The stream never ends: read until its first notification, then close it.
# The generated function reads a whole body, so the generated client's own
# connection (its base URL and key) streams it.
with client.get_httpx_client().stream("GET", "/notifications/stream") as streamed:
    assert streamed.status_code == 200, streamed.status_code
    assert streamed.headers["content-type"] == "text/event-stream"
    events = ""
    for text in streamed.iter_text():
        events += text
        if "event: notification" in events and "\n\n" in events.split("event: notification", 1)[1]:
            break
assert f"id: {notifications.items[0].cursor}\n" in events, events[:300]
called.append("streamNotifications")

webhooks = answer("listWebhooks", list_webhooks.sync_detailed(client=client), models.WebhookList)
assert webhooks.webhooks == [], "a sandbox key has no webhook subscriptions"

snapshots = answer("listSnapshots", list_snapshots.sync_detailed(client=client), models.SnapshotList)
snapshot_id = snapshots.snapshots[0].snapshot_id
manifest = answer(
    "getSnapshotManifest", get_snapshot_manifest.sync_detailed(snapshot_id, client=client), models.Manifest
)
assert manifest.audience == "sandbox" and manifest.row_count == sum(file.rows for file in manifest.files) // 2
file = manifest.files[0]
download = download_snapshot_file.sync_detailed(snapshot_id, file.name, client=client)
assert download.status_code == 200, download.status_code
assert hashlib.sha256(download.parsed).hexdigest() == file.sha256
called.append("downloadSnapshotFile")

keys = answer("getSigningKeys", get_signing_keys.sync_detailed(client=anonymous), models.KeySet)
assert all(public_key.crv == "Ed25519" for public_key in keys.keys)

identify = oai_pmh.sync_detailed(client=anonymous, verb="Identify")
assert identify.status_code == 200 and "<Identify>" in identify.parsed, identify.content[:300]
called.append("oaiPmh")
repository = identify.parsed.split("<repositoryIdentifier>")[1].split("<")[0]
# With its key, a sandbox client harvests the sandbox records.
arguments = models.OaiRequest(verb="GetRecord", identifier=f"oai:{repository}:{work_id}", metadata_prefix="oai_dc")
record = oai_pmh_post.sync_detailed(client=client, body=arguments)
assert record.status_code == 200 and "<oai_dc:dc" in record.parsed and work_id in record.parsed, record.content[:300]
called.append("oaiPmhPost")

description = get_open_api_description.sync_detailed(client=anonymous)
assert description.status_code == 200 and not isinstance(description.parsed, Unset)
called.append("getOpenApiDescription")

print(f"python client: {len(called)} operations called: {' '.join(sorted(called))}")
