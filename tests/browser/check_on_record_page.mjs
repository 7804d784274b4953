// Opens a public record page in Debian's Chromium (driven by playwright-core,
// on a phone-sized screen), then checks documents on it the way a person
// would: dropping a file on the box or pasting text and pressing Check. It
// reports what the page showed and did, and screenshots each verdict.
//
//   node check_on_record_page.mjs < SPEC
//
// SPEC is JSON: {"url", "chromiumFlags": [flag], "screenshots": directory,
// "steps": [{"name", "document": path, "how": "drop" | "paste",
// "screenshot": bool}]}.
// Prints one JSON object: {"record": {"heading", "text", "overflow"},
// "requests": [url], "violations": [directive], "consoleErrors": [text],
// "steps": {name: {"verdict", "signature", "kid", "headline", "sentence",
// "differences", "rows"}}}.

import { readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { chromium } from "playwright-core";

const spec = JSON.parse(readFileSync(0, "utf-8"));
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: spec.chromiumFlags });
const report = { requests: [], violations: [], consoleErrors: [], steps: {} };
try {
  const context = await browser.newContext({
    viewport: { width: 390, height: 844 },
    isMobile: true,
    hasTouch: true,
    acceptDownloads: false,
  });
  const page = await context.newPage();
  page.on("request", (request) => report.requests.push(request.url()));
  page.on("console", (message) => {
    if (message.type() === "error") {
      report.consoleErrors.push(message.text());
    }
  });
  page.on("pageerror", (error) => report.consoleErrors.push(String(error)));
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) => {
      (window.policyViolations ??= []).push(event.violatedDirective);
    });
  });
  const answer = await page.goto(spec.url);
  if (answer.status() !== 200) {
    throw new Error(`the page answered ${answer.status()}`);
  }
  await page.waitForSelector("main[data-ready=true]", { timeout: 30_000 });
  report.record = await page.evaluate(() => ({
    heading: document.querySelector("h1").textContent,
    text: document.querySelector("main").innerText,
    overflow: document.documentElement.scrollWidth - window.innerWidth,
    notice: document.getElementById("simulated")?.textContent ?? null,
  }));
  await page.screenshot({ path: join(spec.screenshots, "record.png"), fullPage: true });
  report.cookies = (await context.cookies()).length;

  for (const step of spec.steps) {
    const text = readFileSync(step.document, "utf-8");
    await page.evaluate(() => {
      document.getElementById("verdict").dataset.verdict = "pending";
    });
    if (step.how === "drop") {
      const dataTransfer = await page.evaluateHandle(
        ({ content, name }) => {
          const transfer = new DataTransfer();
          transfer.items.add(new File([content], name, { type: "application/json" }));
          return transfer;
        },
        { content: text, name: basename(step.document) },
      );
      await page.dispatchEvent("#document", "drop", { dataTransfer });
    } else {
      await page.fill("#document", text);
      await page.click("#check");
    }
    await page.waitForFunction(() => document.getElementById("verdict").dataset.verdict !== "pending", null, {
      timeout: 30_000,
    });
    report.steps[step.name] = await page.evaluate(() => {
      const verdict = document.getElementById("verdict");
      return {
        verdict: verdict.dataset.verdict,
        signature: verdict.dataset.signature,
        kid: verdict.dataset.kid,
        differences: verdict.dataset.differences === undefined ? null : Number(verdict.dataset.differences),
        headline: verdict.querySelector(".headline")?.textContent ?? "",
        sentence: verdict.querySelector(".sentence")?.textContent ?? "",
        rows: [...verdict.querySelectorAll("tbody tr.differs th")].map((cell) => cell.textContent),
        overflow: document.documentElement.scrollWidth - window.innerWidth,
      };
    });
    if (step.screenshot) {
      await page.locator("#checker").screenshot({ path: join(spec.screenshots, `${step.name}.png`) });
    }
  }
  report.violations = await page.evaluate(() => window.policyViolations ?? []);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
