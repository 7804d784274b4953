// Interactive documentation, built from the service's own OpenAPI document.
// Everything runs against the origin that served this page; nothing is loaded
// from anywhere else (the page's Content-Security-Policy enforces it).
"use strict";

const openapiUrl = document.body.dataset.openapiUrl;

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

// Plain text with `code` spans; no HTML from the document is ever interpreted.
function prose(text) {
  const container = element("div");
  for (const paragraph of (text || "").split(/\n\n+/)) {
    const p = element("p");
    paragraph.split("`").forEach((part, index) => p.append(index % 2 ? element("code", { text: part }) : part));
    container.append(p);
  }
  return container;
}

function apiKey() {
  return document.getElementById("api-key").value.trim();
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

async function send(server, path, method, operation, form, output) {
  let url = path;
  const query = new URLSearchParams();
  for (const parameter of operation.parameters || []) {
    const value = form.querySelector(`[data-parameter="${parameter.name}"]`).value;
    if (value === "") continue;
    if (parameter.in === "path") url = url.replace(`{${parameter.name}}`, encodeURIComponent(value));
    else if (parameter.in === "query") query.append(parameter.name, value);
  }
  const headers = {};
  if (apiKey()) headers["x-api-key"] = apiKey();
  const accept = form.querySelector("[data-accept]");
  if (accept) headers["Accept"] = accept.value;
  const init = { method: method.toUpperCase(), headers };
  const body = form.querySelector("textarea[data-body]");
  if (body) {
    headers["Content-Type"] = "application/json";
    init.body = body.value;
  }
  const target = server + url + (query.toString() ? `?${query}` : "");
  output.replaceChildren(element("p", { text: `${init.method} ${target} …` }));
  try {
    const response = await fetch(target, init);
    const text = await response.text();
    const limits = ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"]
      .filter((name) => response.headers.has(name))
      .map((name) => `${name}: ${response.headers.get(name)}`)
      .join("\n");
    output.replaceChildren(
      element("p", { class: "status", text: `${response.status} ${response.statusText}` }),
      element("pre", { class: "headers", text: `content-type: ${response.headers.get("content-type")}\n${limits}` }),
      element("pre", { class: "body", text: pretty(text) }),
    );
  } catch (error) {
    output.replaceChildren(element("p", { class: "status", text: `The request failed: ${error}` }));
  }
}

function renderOperation(server, path, method, operation) {
  const scopes = (operation.security || []).flatMap((requirement) => Object.values(requirement).flat());
  const summary = element(
    "summary",
    {},
    element("span", { class: `method ${method}`, text: method }),
    element("span", { class: "path", text: path }),
    element("span", { text: operation.summary || "" }),
    element("span", { class: "scope", text: scopes.length ? scopes.join(", ") : "no key" }),
  );
  const form = element("form");
  if (operation.parameters && operation.parameters.length) {
    const table = element("table", { class: "parameters" });
    table.append(element("tr", {}, element("th", { text: "Parameter" }), element("th", { text: "Value" }), element("th", { text: "Description" })));
    for (const parameter of operation.parameters) {
      const input = element("input", { "data-parameter": parameter.name, "aria-label": parameter.name });
      if (parameter.example !== undefined) input.value = parameter.example;
      const name = `${parameter.name} (${parameter.in}${parameter.required ? ", required" : ""})`;
      table.append(element("tr", {}, element("td", { class: "path", text: name }), element("td", {}, input), element("td", { text: parameter.description || "" })));
    }
    form.append(table);
  }
  const requestContent = operation.requestBody && operation.requestBody.content["application/json"];
  if (requestContent) {
    const body = element("textarea", { "data-body": "json", "aria-label": "request body" });
    body.value = JSON.stringify(requestContent.example || {}, null, 2);
    form.append(element("p", { text: "Request body (application/json)" }), body);
  }
  const success = Object.entries(operation.responses).find(([status]) => status.startsWith("2"));
  const mediaTypes = success && success[1].content ? Object.keys(success[1].content) : [];
  if (mediaTypes.length > 1) {
    const select = element("select", { "data-accept": "accept", "aria-label": "Accept" });
    for (const type of mediaTypes) select.append(element("option", { value: type, text: type }));
    form.append(element("label", { text: "Accept " }, select));
  }
  const output = element("div", { class: "output" });
  form.append(element("button", { type: "submit", text: "Send" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    send(server, path, method, operation, form, output);
  });
  const responses = element("ul", { class: "responses" });
  for (const [status, response] of Object.entries(operation.responses)) {
    responses.append(element("li", {}, element("span", { class: "status", text: status }), ` ${response.description || ""}`));
  }
  const body = element("div", { class: "operation-body" }, prose(operation.description), form, output, element("h4", { text: "Responses" }), responses);
  const example = success && success[1].content && success[1].content["application/json"];
  if (example && example.example !== undefined) {
    body.append(element("h4", { text: `Example ${success[0]} response (sandbox fixtures)` }), element("pre", { class: "example", text: JSON.stringify(example.example, null, 2) }));
  }
  return element("details", { class: "operation", "data-operation-id": operation.operationId || "" }, summary, body);
}

function render(document_) {
  document.getElementById("title").textContent = document_.info.title;
  document.getElementById("version").textContent = `Version ${document_.info.version} · OpenAPI ${document_.openapi}`;
  document.getElementById("description").replaceChildren(prose(document_.info.description));
  const server = (document_.servers && document_.servers[0] && document_.servers[0].url) || "";
  const byTag = new Map((document_.tags || []).map((tag) => [tag.name, []]));
  for (const [path, item] of Object.entries(document_.paths)) {
    for (const method of ["get", "post", "put", "patch", "delete"]) {
      const operation = item[method];
      if (!operation) continue;
      const tag = (operation.tags && operation.tags[0]) || "Other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push(renderOperation(server, path, method, operation));
    }
  }
  const main = document.getElementById("operations");
  main.replaceChildren();
  for (const [tag, operations] of byTag) {
    if (operations.length) main.append(element("h2", { class: "tag", text: tag }), ...operations);
  }
  document.body.dataset.state = "ready";
}

async function register(event) {
  event.preventDefault();
  const result = document.getElementById("register-result");
  const email = document.getElementById("register-email").value;
  const server = document.body.dataset.server;
  const response = await fetch(`${server}/sandbox/register`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email }),
  });
  const body = await response.json();
  if (response.ok) {
    document.getElementById("api-key").value = body.apiKey;
    result.textContent = `Sandbox key set; it expires at ${body.expiresAt}.`;
  } else {
    result.textContent = `${response.status}: ${body.detail}`;
  }
}

async function main() {
  try {
    const response = await fetch(openapiUrl);
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
    const description = await response.json();
    document.body.dataset.server = (description.servers && description.servers[0] && description.servers[0].url) || "";
    render(description);
  } catch (error) {
    document.getElementById("operations").replaceChildren(element("p", { text: `The OpenAPI description could not be loaded: ${error}` }));
    document.body.dataset.state = "failed";
  }
  document.getElementById("register").addEventListener("submit", register);
}

main();
