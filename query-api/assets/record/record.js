// The public record page's checker: a pasted or dropped evidence package
// (or snapshot manifest) is checked against the key set of this record's
// audience, fetched from the page's own origin, and compared with the
// record the page shows. The verdict is written with textContent only:
// nothing pasted is ever read as markup. The verdict element's data-*
// attributes carry the outcome for scripts (data-verdict, data-signature,
// data-kid, data-differences).

import { verdictSentence, verifyDocument } from "./verification.js";

const page = document.getElementById("record");
const record = JSON.parse(document.getElementById("public-record").textContent);
const basePath = page.dataset.basePath;
const form = document.getElementById("check-form");
const input = document.getElementById("document");
const fileInput = document.getElementById("file");
const verdictArea = document.getElementById("verdict");

// What each kind of failure means to someone handed the document.
const PLAIN_REJECTIONS = {
  "not-json": "this is not a JSON document",
  "not-an-object": "this is not an evidence package or a snapshot manifest",
  unsigned: "the document carries no signature, so nothing says the registry issued it",
  malformed: "its signature is damaged or was not made by this registry",
  "unknown-key": "no key this registry publishes signed it",
  "unusable-key": "the registry's key set is damaged; report it to the registry",
  "not-checkable": "this browser cannot rebuild exactly what was signed; check it with `query-api evidence verify`",
  "content-changed": "the document was changed after the registry signed it; do not rely on what it says",
  "signed-after-retirement": "it is dated after its key was retired, so the registry did not issue it then",
};
const AUDIENCE_NAMES = { production: "a record of the registry", sandbox: "sandbox data (simulated)" };
const keySets = new Map();

// The key set of `audience`, fetched once per page.
function keySet(audience) {
  if (!keySets.has(audience)) {
    const query = audience === "sandbox" ? "?audience=sandbox" : "";
    const request = fetch(`${basePath}/keys${query}`, { credentials: "omit" }).then((answer) => {
      if (!answer.ok) {
        throw new Error(`the key set answered ${answer.status}`);
      }
      return answer.json();
    });
    request.catch(() => keySets.delete(audience));
    keySets.set(audience, request);
  }
  return keySets.get(audience);
}

// What a parsed document is, and whose.
function describe(parsed) {
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return { kind: "unknown", audience: null };
  }
  if (typeof parsed.lccId === "string" && "fileSha256" in parsed) {
    return { kind: "package", audience: parsed.lccId.startsWith("SANDBOX-") ? "sandbox" : "production" };
  }
  if (typeof parsed.snapshotId === "string" && Array.isArray(parsed.files)) {
    return { kind: "manifest", audience: parsed.audience === "sandbox" ? "sandbox" : "production" };
  }
  return { kind: "unknown", audience: null };
}

function words(code) {
  return typeof code === "string" ? code.replaceAll("_", " ") : "none";
}

function certificate(value) {
  if (value === null || value === undefined) {
    return "none";
  }
  return `${value.certificateId}, ${value.revoked ? "revoked" : "valid"}`;
}

// Each statement of a package the public record also states: its name,
// what the package says and what the record says now.
function statements(pkg) {
  const chain = pkg.provenanceChain ?? {};
  const now = record.provenanceChain;
  let chainNow = `${now.length} entries, head ${now.hash}`;
  let chainSame = chain.length === now.length && chain.hash === now.hash;
  if (!chainSame && Number.isInteger(chain.length) && now.length > chain.length) {
    const added = now.length - chain.length;
    chainNow += ` (${added} ${added === 1 ? "entry" : "entries"} added since)`;
  }
  return [
    ["Title", pkg.title, record.title],
    ["Status", words(pkg.status), words(record.status)],
    ["Earliest recorded", pkg.earliestRecordedAt, record.earliestRecordedAt],
    ["File SHA-256", pkg.fileSha256, record.fileSha256],
    ["Certificate", certificate(pkg.certificate), certificate(record.certificate)],
    ["Dispute status", words(pkg.disputeStatus), words(record.disputeStatus)],
    ["Protection ends on", pkg.protection?.endsOn ?? "none", record.protection.endsOn ?? "none"],
    ["Protection in force", pkg.protection?.inForce ? "yes" : "no", record.protection.inForce ? "yes" : "no"],
    ["Provenance chain", `${chain.length} entries, head ${chain.hash}`, chainNow, chainSame],
  ].map(([name, stated, current, same]) => ({ name, stated: String(stated), current, same: same ?? stated === current }));
}

function paragraph(className, text) {
  const element = document.createElement("p");
  element.className = className;
  element.textContent = text;
  return element;
}

function comparisonTable(rows) {
  const table = document.createElement("table");
  const caption = table.createCaption();
  caption.textContent = "The package's statements and the public record now";
  const head = table.createTHead().insertRow();
  for (const title of ["Statement", "In the package", "In the record now", ""]) {
    const cell = document.createElement("th");
    cell.scope = "col";
    cell.textContent = title;
    head.append(cell);
  }
  const body = table.createTBody();
  for (const row of rows) {
    const line = body.insertRow();
    line.className = row.same ? "same" : "differs";
    const name = document.createElement("th");
    name.scope = "row";
    name.textContent = row.name;
    line.append(name);
    for (const [label, text] of [
      ["In the package", row.stated],
      ["In the record now", row.current],
      ["", row.same ? "same" : "differs"],
    ]) {
      const cell = line.insertCell();
      cell.dataset.label = label;
      cell.textContent = text;
    }
  }
  const chain = body.insertRow();
  const name = document.createElement("th");
  name.scope = "row";
  name.textContent = "Rights chain";
  chain.append(name);
  const note = chain.insertCell();
  note.colSpan = 3;
  note.textContent = "Not public: only the registry's signature vouches for who holds which rights.";
  return table;
}

// Shows a verdict: `kind` for data-verdict, a headline, the command's
// sentence, and further elements.
function show(kind, headline, verdict, ...details) {
  verdictArea.replaceChildren(paragraph("headline", headline));
  if (verdict) {
    verdictArea.append(paragraph("sentence", verdictSentence(verdict)));
  }
  verdictArea.append(...details);
  verdictArea.dataset.verdict = kind;
  verdictArea.dataset.signature = verdict ? (verdict.valid ? "valid" : "invalid") : "";
  verdictArea.dataset.kid = verdict?.kid ?? "";
  verdictArea.className = `verdict ${kind}`;
}

function signedBy(verdict) {
  const status = verdict.status ? ` (${verdict.status})` : "";
  return `key ${verdict.kid}${status}`;
}

async function check(text) {
  if (text.trim() === "") {
    show("empty", "Paste or drop a document first.", null);
    return;
  }
  if (!globalThis.crypto?.subtle) {
    show("unsupported", "This browser cannot check signatures on this page (it needs HTTPS).", null);
    return;
  }
  let parsed = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  const { kind, audience } = describe(parsed);
  let verdict;
  try {
    verdict = await verifyDocument(text, await keySet(record.audience));
  } catch (error) {
    show("unavailable", `The registry's key set could not be fetched: ${error.message}. Try again shortly.`, null);
    return;
  }
  delete verdictArea.dataset.differences;
  if (audience !== null && audience !== record.audience) {
    let theirs = null;
    try {
      theirs = await verifyDocument(text, await keySet(audience));
    } catch {
      theirs = null;
    }
    const what = kind === "manifest" ? "snapshot manifest" : "package";
    const signature = theirs?.valid
      ? `Against the ${audience} keys its signature is valid (${signedBy(theirs)}).`
      : `Against the ${audience} keys it does not verify either.`;
    show(
      "other-audience",
      `Audience mismatch: this ${what} is ${AUDIENCE_NAMES[audience]}, and this page is ${AUDIENCE_NAMES[record.audience]}. ${signature}`,
      verdict,
    );
    return;
  }
  if (!verdict.valid) {
    show("invalid", `Not valid: ${PLAIN_REJECTIONS[verdict.rejection] ?? verdict.reason}.`, verdict);
    return;
  }
  if (kind === "manifest") {
    show(
      "valid-manifest",
      `Valid: a snapshot manifest of the ${parsed.audience} catalogue signed by ${signedBy(verdict)}, cut at ${verdict.dated}, ` +
        `${parsed.rowCount} works in ${parsed.files.length} files. Check each downloaded file's SHA-256 against it.`,
      verdict,
    );
    return;
  }
  if (kind !== "package") {
    show("valid-other", `Valid: signed by ${signedBy(verdict)}, but it is neither an evidence package nor a snapshot manifest.`, verdict);
    return;
  }
  if (parsed.lccId !== record.lccId) {
    show(
      "other-work",
      `Valid, but of another work: this package is about ${parsed.lccId}, and this page is the record of ${record.lccId}.`,
      verdict,
    );
    return;
  }
  const rows = statements(parsed);
  const differences = rows.filter((row) => !row.same).length;
  const agreement =
    differences === 0
      ? "Every statement it shares with the public record agrees with the record now."
      : `${differences} of its statements ${differences === 1 ? "differs" : "differ"} from the public record now: the record changed after the package was issued.`;
  show(
    "valid",
    `Valid: issued by the registry at ${verdict.dated}, signed by ${signedBy(verdict)}. ${agreement}`,
    verdict,
    comparisonTable(rows),
  );
  verdictArea.dataset.differences = String(differences);
}

async function checkFile(file) {
  if (file) {
    input.value = await file.text();
    await check(input.value);
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  check(input.value);
});
fileInput.addEventListener("change", () => checkFile(fileInput.files[0]));
for (const name of ["dragenter", "dragover"]) {
  input.addEventListener(name, (event) => {
    event.preventDefault();
    input.classList.add("dropping");
  });
}
input.addEventListener("dragleave", () => input.classList.remove("dropping"));
input.addEventListener("drop", (event) => {
  event.preventDefault();
  input.classList.remove("dropping");
  const [file] = event.dataTransfer.files;
  if (file) {
    checkFile(file);
  } else {
    input.value = event.dataTransfer.getData("text/plain");
    check(input.value);
  }
});
page.dataset.ready = "true";
