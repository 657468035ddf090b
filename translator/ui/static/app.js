// The page at /ui: a client of the service's public API, like any other (docs/api.md).
// No framework and no build step: what the browser ships is this file as written.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const AUTO = "auto";
  const POLL_MS = 500;
  let names = {};
  // Only the answer to the latest request is shown: an earlier one arriving late is dropped.
  let textRequest = 0;
  let documentRequest = 0;
  let keyRequired = false;

  function show(element, message) {
    element.textContent = message || "";
    element.hidden = !message;
  }

  function languageName(code) {
    return names[code] || code;
  }

  function authHeaders(extra) {
    const headers = Object.assign({}, extra);
    const key = $("api-key").value.trim();
    if (key) headers.Authorization = "Bearer " + key;
    return headers;
  }

  // The service's errors are JSON objects whose `error` names the field and the problem.
  async function errorMessage(response) {
    try {
      const body = await response.json();
      if (body && typeof body.error === "string") return body.error;
    } catch (_) {
      // not JSON: fall through to the status line
    }
    return `The server answered ${response.status} ${response.statusText}`.trim();
  }

  function refused(response) {
    if (response.status === 401 || response.status === 403) {
      $("key-row").hidden = false;
      $("api-key").focus();
    }
  }

  async function getJSON(path) {
    const response = await fetch(path, { headers: authHeaders({ Accept: "application/json" }) });
    if (!response.ok) throw new Error(await errorMessage(response));
    return response.json();
  }

  function fillLanguages(codes, detectable) {
    const sorted = [...codes].sort((a, b) => languageName(a).localeCompare(languageName(b)));
    const source = $("source-lang");
    const target = $("target-lang");
    for (const code of sorted) {
      const label = `${languageName(code)} (${code})`;
      source.append(new Option(label, code));
      target.append(new Option(label, code));
    }
    if (!detectable.length) source.querySelector(`option[value="${AUTO}"]`).remove();
    const saved = (key, fallback, allowed) => {
      const value = localStorage.getItem(key);
      return value && allowed.includes(value) ? value : fallback;
    };
    source.value = saved("ui.source", detectable.length ? AUTO : sorted[0], [AUTO, ...codes]);
    target.value = saved("ui.target", codes.includes("en") ? "en" : sorted[0], codes);
    source.disabled = false;
    target.disabled = false;
  }

  async function load() {
    try {
      const [languages, settings] = await Promise.all([getJSON("/languages"), getJSON("/ui/settings")]);
      names = settings.names || {};
      fillLanguages(languages.languages, (languages.autoDetect || {}).languages || []);
      // The server's limit of characters a text (on the element, where the page reads it back).
      $("source-text").dataset.maxChars = String(settings.maxChars || 0);
      for (let n = 1; n <= settings.maxAlternatives; n += 1) $("alternatives").append(new Option(String(n), String(n)));
      if (settings.keyRequired) $("key-row").hidden = false;
      if (settings.fileFormats && settings.fileFormats.length) {
        $("document-file").accept = settings.fileFormats.join(",");
        $("document-formats").textContent = `Formats: ${settings.fileFormats.join(", ")}.`;
      }
      $("api-key").value = sessionStorage.getItem("ui.key") || "";
      keyRequired = Boolean(settings.keyRequired);
      await loadMemories(keyRequired);
      countChars();
      document.body.dataset.ready = "true";
    } catch (error) {
      show($("page-error"), `The languages could not be loaded: ${error.message}`);
    }
  }

  // Characters as the server counts them (code points: an emoji is one, where a JavaScript string
  // and the textarea's maxlength count two), so the counter, the check below and the server agree.
  // No maxlength: it counts otherwise, and it does not bound a text put there by a script or a swap.
  const charCount = (text) => Array.from(text).length;
  const maxChars = () => Number($("source-text").dataset.maxChars) || 0;

  function overLimit(text) {
    return maxChars() > 0 && charCount(text) > maxChars();
  }

  function countChars() {
    const text = $("source-text").value;
    const counter = $("char-count");
    counter.textContent = maxChars() > 0 ? `${charCount(text)} / ${maxChars()} characters` : "";
    counter.classList.toggle("over", overLimit(text));
    $("source-text").setAttribute("aria-invalid", String(overLimit(text)));
  }

  // What an error makes stale: the previous translation, its detected language and alternatives
  // would otherwise stand beside the message as if they answered this text.
  function clearResult() {
    $("target-text").textContent = "";
    showOrigin(null);
    $("detected").textContent = "";
    delete $("detected").dataset.code;
    showAlternatives([]);
  }

  function showDetected(record) {
    const detected = $("detected");
    if (!record.detectedLang) {
      detected.textContent = "";
    } else if (record.detectedLang === "und") {
      detected.textContent = "Language not detected: the text was left as it is.";
    } else {
      const confidence = Math.round((record.detectedConfidence || 0) * 100);
      detected.textContent = `Detected language: ${languageName(record.detectedLang)} (${confidence}%)`;
      detected.dataset.code = record.detectedLang;
    }
  }

  // Where the text came from, said only when a memory was asked (the answer then has `origin`):
  // people's translation from the memory (exact, or with numbers or tags substituted) or the
  // model's. Fuzzy matches the server reports beside the model's text are not used by the page.
  function showOrigin(origin) {
    const badge = $("origin");
    if (!origin) {
      badge.textContent = "";
      badge.hidden = true;
      delete badge.dataset.kind;
      return;
    }
    badge.textContent = origin.kind === "memory" ? `from memory (${origin.match})` : "machine translation";
    badge.dataset.kind = origin.kind;
    badge.hidden = false;
  }

  // The memories, named with their source language, for the key in use: listed again when the key
  // changes. Not asked without a key where one is needed (it would only be refused).
  let memoriesAsked = 0;
  async function loadMemories(keyRequired) {
    const request = ++memoriesAsked;
    const select = $("memory");
    const chosen = select.value;
    if (keyRequired && !$("api-key").value.trim()) return;
    try {
      const { memories = [] } = await getJSON("/memories");
      if (request !== memoriesAsked) return;
      const options = memories.map((memory) => {
        const option = new Option(`${memory.name} (${languageName(memory.sourceLang)})`, memory.memoryId);
        option.dataset.sourceLang = memory.sourceLang;
        return option;
      });
      select.replaceChildren(new Option("none", ""), ...options);
      select.value = memories.some((memory) => memory.memoryId === chosen) ? chosen : "";
    } catch (_) {
      // A server refusing the list (a key it does not take): the page translates without memories.
    }
  }

  function showAlternatives(alternatives) {
    const list = $("alternatives-list");
    list.replaceChildren(...alternatives.map((text) => {
      const item = document.createElement("li");
      item.textContent = text;
      return item;
    }));
    $("alternatives-section").hidden = alternatives.length === 0;
  }

  async function translateText(event) {
    event.preventDefault();
    const text = $("source-text").value;
    const request = ++textRequest;
    show($("text-error"), "");
    if (!text.trim()) {
      clearResult();
      show($("text-error"), "Type a text to translate.");
      return;
    }
    if (overLimit(text)) {
      clearResult();
      show($("text-error"), `The text has ${charCount(text)} characters; at most ${maxChars()} are translated at once.`);
      return;
    }
    const payload = {
      fromLang: $("source-lang").value,
      toLang: $("target-lang").value,
      records: [{ id: "1", text }],
    };
    const alternatives = Number($("alternatives").value);
    if (alternatives > 0) payload.alternatives = alternatives;
    const memory = $("memory").value;
    if (memory) payload.translationMemory = memory;
    const output = $("target-text");
    output.setAttribute("aria-busy", "true");
    $("text-status").textContent = "Translating…";
    try {
      const response = await fetch("/translation", {
        method: "POST",
        headers: authHeaders({ "Content-Type": "application/json" }),
        body: JSON.stringify({ payload }),
      });
      if (request !== textRequest) return;
      if (!response.ok) {
        clearResult();
        show($("text-error"), await errorMessage(response));
        refused(response);
        return;
      }
      const [record] = (await response.json()).result;
      if (request !== textRequest) return;
      output.textContent = record.text;
      showOrigin(record.origin);
      showDetected(record);
      showAlternatives(record.alternatives || []);
    } catch (error) {
      if (request === textRequest) {
        clearResult();
        show($("text-error"), `The server could not be reached: ${error.message}`);
      }
    } finally {
      if (request === textRequest) {
        output.setAttribute("aria-busy", "false");
        $("text-status").textContent = "";
      }
    }
  }

  function swapLanguages() {
    const source = $("source-lang");
    const target = $("target-lang");
    const from = source.value === AUTO ? $("detected").dataset.code : source.value;
    if (!from) return;
    source.value = target.value;
    target.value = from;
    const translated = $("target-text").textContent;
    if (translated) {
      $("source-text").value = translated;
      clearResult();
      countChars();
    }
    remember();
  }

  function remember() {
    localStorage.setItem("ui.source", $("source-lang").value);
    localStorage.setItem("ui.target", $("target-lang").value);
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  function showProgress(job) {
    const progress = $("document-progress");
    const { done = 0, total = 0 } = job.progress || {};
    $("document-progress-row").hidden = false;
    progress.max = Math.max(total, 1);
    progress.value = job.status === "done" ? progress.max : Math.min(done, progress.max);
    progress.setAttribute("aria-valuetext", total ? `${done} of ${total} parts` : job.status);
  }

  async function translateDocument(file) {
    const request = ++documentRequest;
    const status = $("document-status");
    const download = $("document-download");
    show($("document-error"), "");
    download.hidden = true;
    download.removeAttribute("href");
    showProgress({ status: "queued" });
    status.textContent = `Sending ${file.name}…`;
    const fail = (message) => {
      if (request !== documentRequest) return;
      show($("document-error"), message);
      status.textContent = "";
      $("document-progress-row").hidden = true;
    };
    try {
      const form = new FormData();
      form.append("file", file);
      form.append("fromLang", $("source-lang").value);
      form.append("toLang", $("target-lang").value);
      if ($("memory").value) form.append("translationMemory", $("memory").value);
      let response = await fetch("/documents", { method: "POST", headers: authHeaders(), body: form });
      while (request === documentRequest) {
        if (!response.ok) {
          fail(await errorMessage(response));
          refused(response);
          return;
        }
        const job = await response.json();
        if (request !== documentRequest) return;
        showProgress(job);
        if (job.status === "failed") {
          fail(job.error || `${file.name} could not be translated.`);
          return;
        }
        if (job.status === "done") {
          const detected = job.detectedLanguage ? ` from ${languageName(job.detectedLanguage)}` : "";
          const hits = job.translationMemory ? ` ${job.memoryHits || 0} of its parts came from the memory.` : "";
          status.textContent = `${job.filename || file.name} is translated${detected}.${hits}`;
          download.href = job.resultUrl;
          download.setAttribute("download", "");
          download.hidden = false;
          download.focus();
          return;
        }
        const { done = 0, total = 0 } = job.progress || {};
        status.textContent = total ? `Translating ${file.name}: ${done} of ${total} parts` : `${file.name} is queued…`;
        await sleep(POLL_MS);
        response = await fetch(`/documents/${encodeURIComponent(job.id)}`, { headers: authHeaders() });
      }
    } catch (error) {
      fail(`The server could not be reached: ${error.message}`);
    }
  }

  function wireDropZone() {
    const zone = $("drop-zone");
    const input = $("document-file");
    input.addEventListener("change", () => {
      if (input.files.length) translateDocument(input.files[0]);
      input.value = ""; // choosing the same file again translates it again
    });
    zone.addEventListener("dragover", (event) => {
      event.preventDefault();
      zone.classList.add("dragging");
    });
    zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      zone.classList.remove("dragging");
      if (event.dataTransfer.files.length) translateDocument(event.dataTransfer.files[0]);
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("text-form").addEventListener("submit", translateText);
    $("source-text").addEventListener("input", countChars);
    $("source-text").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        $("text-form").requestSubmit();
      }
    });
    $("swap").addEventListener("click", swapLanguages);
    $("source-lang").addEventListener("change", remember);
    $("target-lang").addEventListener("change", remember);
    $("api-key").addEventListener("change", () => {
      sessionStorage.setItem("ui.key", $("api-key").value.trim());
      loadMemories(keyRequired);
    });
    wireDropZone();
    load();
  });
})();
