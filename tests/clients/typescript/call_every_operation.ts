// Calls every operation of the served API through openapi-fetch, typed by
// the `paths` that openapi-typescript generated from the served OpenAPI
// document (./schema.d.ts, written beside this file by the test), with a
// sandbox key it registers itself, and checks each result.
//
//   node call_every_operation.js BASE_URL
//
// BASE_URL is the origin and base path (http://HOST:PORT/api/v1/public/v1).
// `tsc --strict` type-checks this file against the generated types first,
// so a field the document does not describe fails before anything runs.

import { createHash } from "node:crypto";
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

const baseUrl = process.argv[2];
const called: string[] = [];

/** The data of a call, checked to have the status the operation documents. */
function answer<T>(operation: string, result: { data?: T; error?: unknown; response: Response }, status = 200): T {
  if (result.response.status !== status || result.data === undefined) {
    throw new Error(`${operation}: ${result.response.status} ${JSON.stringify(result.error)}`);
  }
  called.push(operation);
  return result.data;
}

function check(condition: boolean, what: string): void {
  if (!condition) {
    throw new Error(`check failed: ${what}`);
  }
}

const anonymous = createClient<paths>({ baseUrl });

const fixtures = answer("listSandboxFixtures", await anonymous.GET("/sandbox/fixtures"));
check(fixtures.count === fixtures.fixtures.length && fixtures.count > 0, "the fixture catalogue counts its entries");
const works = fixtures.fixtures.filter((fixture) => fixture.resource === "work");
const licenses = fixtures.fixtures.filter((fixture) => fixture.resource === "license");
const byIswc = works.find((fixture) => typeof fixture.iswc === "string");
const byIsrc = works.find((fixture) => fixture.isrcs.length > 0);
if (byIswc?.iswc == null || byIsrc === undefined || licenses.length === 0) {
  throw new Error("the fixtures name a work by ISWC, one by ISRC and a license");
}

const registration: components["schemas"]["Registration"] = { email: "generated-typescript-client@example.com" };
const key = answer("registerSandboxKey", await anonymous.POST("/sandbox/register", { body: registration }), 201);
check(key.keyType === "sandbox" && key.scopes.includes("rights:read"), "a sandbox key with every scope");
const client = createClient<paths>({ baseUrl, headers: { "x-api-key": key.apiKey } });

const workId = byIswc.id;
const onWork = { params: { path: { lccId: workId } } };
const profileAnswer = await client.GET("/rights/{lccId}", onWork);
const profile = answer("getRightsProfile", profileAnswer);
check(profile.lccId === workId && profile.iswc === byIswc.iswc, "the profile of the work asked for");

const found = answer("findRightsProfiles", await client.GET("/rights", { params: { query: { isrc: byIsrc.isrcs[0] } } }));
check(found.results.length === 1 && found.results[0].lccId === byIsrc.id, "the ISRC finds its work");

const lookup: components["schemas"]["LookupRequest"] = { lccIds: [workId, "SANDBOX-LCC-9999"], iswcs: [byIswc.iswc] };
const lookedUp = answer("lookupRightsProfiles", await client.POST("/rights/lookup", { body: lookup }));
check(lookedUp.count === 3 && lookedUp.results.length === 3, "one result per identifier asked");

const verification = answer("verifyRights", await client.GET("/rights/{lccId}/verify", onWork));
check(verification.lccId === workId && verification.checks[0].name === "certificate", "the checks of the work");

const licenseId = licenses[0].id;
const status = answer(
  "getLicenseStatus",
  await client.GET("/licenses/{id}/status", { params: { path: { id: licenseId } } }),
);
check(status.licenseId === licenseId && ["Blanket", "Individual"].includes(status.kind), "the license asked for");

const metadata = answer("getMetadata", await client.GET("/rights/{lccId}/metadata", onWork));
// The operation answers JSON or, by content negotiation, XML: the JSON form unless XML is asked for.
if (typeof metadata === "string") {
  throw new Error("getMetadata answered XML without being asked for it");
}
check(metadata.lccId === workId && metadata.title[0] === profile.title, "the Dublin Core record of the work");
const xml = await client.GET("/rights/{lccId}/metadata", {
  ...onWork,
  headers: { accept: "application/xml" },
  parseAs: "text",
});
check(xml.response.status === 200 && String(xml.data).includes("<oai_dc:dc"), "the oai_dc form by content negotiation");

const provenance = answer("getProvenance", await client.GET("/rights/{lccId}/provenance", onWork));
check(provenance.entries.length > 0 && provenance.chain.length === provenance.entries.length, "a chained provenance");

const evidence = answer("getEvidencePackage", await client.GET("/rights/{lccId}/evidence", onWork));
check(evidence.lccId === workId && evidence.signature.split(".").length === 3, "a signed evidence package");

const publicRecord = answer(
  "getPublicRecord",
  await anonymous.GET("/records/{lccId}", { params: { path: { lccId: workId } } }),
);
// JSON, or by content negotiation the HTML page: the JSON form unless HTML is asked for.
if (typeof publicRecord === "string") {
  throw new Error("getPublicRecord answered HTML without being asked for it");
}
check(
  evidence.publicLookupUrl.endsWith(`/records/${workId}`) &&
    publicRecord.lccId === workId &&
    publicRecord.audience === "sandbox" &&
    publicRecord.fileSha256 === evidence.fileSha256 &&
    publicRecord.provenanceChain.hash === evidence.provenanceChain.hash,
  "the keyless public record the package links to",
);
const recordPage = await anonymous.GET("/records/{lccId}", {
  params: { path: { lccId: workId } },
  headers: { accept: "text/html" },
  parseAs: "text",
});
check(
  recordPage.response.status === 200 && String(recordPage.data).includes(`data-lcc-id="${workId}"`),
  "the page form by content negotiation",
);

const page = answer("listPublishedWorks", await client.GET("/bulk/works", { params: { query: { limit: 5 } } }));
check(page.total > 0 && page.items.length > 0 && page.items.length <= 5, "a page of the export");

const changes = answer("listChanges", await client.GET("/bulk/changes", { params: { query: { limit: 5 } } }));
check(changes.items.length > 0 && changes.next.startsWith("c1."), "a page of the change feed");

const notifications = answer(
  "listNotifications",
  await client.GET("/notifications", { params: { query: { limit: 1000 } } }),
);
const newestOfWork = notifications.items.filter((item) => item.subject === "work" && item.id === workId).pop();
check(notifications.next.startsWith("n1.") && newestOfWork !== undefined, "the work's notification");
check(
  newestOfWork?.tags.rights === profileAnswer.response.headers.get("etag"),
  "the notification names the tag the profile is served with",
);

// The stream never ends: read until its first notification, then close it.
const streamed = answer(
  "streamNotifications",
  await client.GET("/notifications/stream", { parseAs: "stream" }),
) as unknown as ReadableStream<Uint8Array>;
const reader = streamed.getReader();
const decoder = new TextDecoder();
let events = "";
while (!/event: notification\n[^\n]*\n[^\n]*\n\n/.test(events)) {
  const { value, done } = await reader.read();
  if (done) {
    break;
  }
  events += decoder.decode(value, { stream: true });
}
await reader.cancel();
check(events.includes(`id: ${notifications.items[0].cursor}\n`), "the stream starts with the feed's first item");

const webhooks = answer("listWebhooks", await client.GET("/webhooks"));
check(webhooks.webhooks.length === 0, "a sandbox key has no webhook subscriptions");

const snapshots = answer("listSnapshots", await client.GET("/bulk/snapshots"));
const snapshotId = snapshots.snapshots[0].snapshotId;
const manifest = answer(
  "getSnapshotManifest",
  await client.GET("/bulk/snapshots/{snapshotId}", { params: { path: { snapshotId } } }),
);
check(manifest.audience === "sandbox" && manifest.files.length > 0, "the sandbox snapshot's manifest");
const file = manifest.files[0];
const download = answer(
  "downloadSnapshotFile",
  await client.GET("/bulk/snapshots/{snapshotId}/files/{name}", {
    params: { path: { snapshotId, name: file.name } },
    parseAs: "arrayBuffer",
  }),
);
const sha256 = createHash("sha256").update(Buffer.from(download)).digest("hex");
check(sha256 === file.sha256, "the file's bytes have the manifest's SHA-256");

const keys = answer("getSigningKeys", await anonymous.GET("/keys"));
check(keys.keys.every((publicKey) => publicKey.crv === "Ed25519"), "Ed25519 keys");

const identify = answer(
  "oaiPmh",
  await anonymous.GET("/oai", { params: { query: { verb: "Identify" } }, parseAs: "text" }),
);
const repository = String(identify).split("<repositoryIdentifier>")[1].split("<")[0];
const oaiRequest: components["schemas"]["OaiRequest"] = {
  verb: "GetRecord",
  identifier: `oai:${repository}:${workId}`,
  metadataPrefix: "oai_dc",
};
const record = answer(
  "oaiPmhPost",
  await client.POST("/oai", {
    body: oaiRequest,
    bodySerializer: (body) => new URLSearchParams(body as Record<string, string>),
    parseAs: "text",
  }),
);
check(String(record).includes("<oai_dc:dc") && String(record).includes(workId), "the work's oai_dc record");

const description = answer("getOpenApiDescription", await anonymous.GET("/openapi.json"));
check(JSON.stringify(description).includes("getRightsProfile"), "the served document");

console.log(`typescript client: ${called.length} operations called: ${[...called].sort().join(" ")}`);
