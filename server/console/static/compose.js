// The composer's script: live check and previews, per-platform show/hide, live TikTok/Pinterest choices, and
// browser uploads with progress through upload sessions. The form works without it (server/console/pages/compose.py).
(() => {
  const form = document.getElementById("composer");
  if (!form) return;
  const base = `${form.dataset.prefix}/brands/${form.dataset.brand}/compose`;
  const csrf = form.elements.csrf.value;
  const live = document.getElementById("live");

  function chosenPlatforms() {
    return new Set([...form.querySelectorAll("input[name=integration_ids]:checked")].map((i) => i.dataset.platform));
  }

  function showChosen() {
    const platforms = chosenPlatforms();
    const perPlatform = form.querySelector("input[name=copy_mode]:checked")?.value === "per_platform";
    form.querySelectorAll(".copy").forEach((el) => {
      el.hidden = el.dataset.copy === "single" ? perPlatform : !(perPlatform && platforms.has(el.dataset.platform));
    });
    form.querySelectorAll("fieldset.settings").forEach((el) => { el.hidden = !platforms.has(el.dataset.platform); });
  }

  function fields() {
    const data = new URLSearchParams();
    for (const [name, value] of new FormData(form)) if (typeof value === "string") data.append(name, value);
    return data;
  }

  let timer = null;
  let sent = 0;
  async function check() {
    const mine = ++sent;
    try {
      const resp = await fetch(`${base}/check`, { method: "POST", body: fields(), headers: { Accept: "application/json" } });
      if (mine !== sent) return; // a later check is on its way: keep its answer only
      if (!resp.ok) { live.querySelector("h2").insertAdjacentText("afterend", ` (check failed: ${resp.status})`); return; }
      live.innerHTML = (await resp.json()).html; // rendered by the server's autoescaping template
    } catch (err) { /* offline: the Check button still works */ }
  }
  function soon() { clearTimeout(timer); timer = setTimeout(check, 500); }

  async function loadOptions(box) {
    const fieldset = form.querySelector(`fieldset.settings[data-platform="${box.dataset.platform}"]`);
    const select = fieldset?.querySelector("select[data-dynamic]");
    if (!select || !box.checked) return;
    const note = fieldset.querySelector("[data-options-note]");
    const resp = await fetch(`${base}/options/${encodeURIComponent(box.value)}`, { headers: { Accept: "application/json" } });
    const data = await resp.json();
    if (data.error) { note.textContent = data.error; return; }
    const have = new Set([...select.options].map((o) => o.value));
    for (const o of data.options) if (!have.has(o.value)) select.add(new Option(o.label, o.value));
    note.textContent = "Live choices of the account.";
  }

  async function sha256(buffer) {
    const digest = await crypto.subtle.digest("SHA-256", buffer);
    return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }

  function put(url, headers, body, progress) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("PUT", url);
      for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() !== "content-length") xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = (e) => { if (e.lengthComputable) progress.value = e.loaded / e.total; };
      xhr.onload = () => (xhr.status < 300 ? resolve() : reject(new Error(`upload refused (${xhr.status})`)));
      xhr.onerror = () => reject(new Error("upload failed"));
      xhr.send(body);
    });
  }

  async function ready(id, note) {
    for (let i = 0; i < 240; i++) {
      const resp = await fetch(`${base}/media/${encodeURIComponent(id)}`, { headers: { Accept: "application/json" } });
      const data = await resp.json();
      if (data.error) throw new Error(data.error);
      if (data.ready) return data;
      if (data.status === "failed") throw new Error(data.guidance.join(" ") || "processing failed");
      note.textContent = data.status;
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error("still processing: reload the page later");
  }

  async function upload(file) {
    const row = document.createElement("li");
    const progress = document.createElement("progress");
    const note = document.createElement("span");
    progress.max = 1; progress.value = 0;
    row.append(`${file.name} `, progress, " ", note);
    progress.setAttribute("aria-label", `Upload of ${file.name}`);
    document.getElementById("uploads").append(row);
    try {
      note.textContent = "preparing";
      const buffer = await file.arrayBuffer();
      const start = new URLSearchParams({ csrf, filename: file.name, content_type: file.type, size: String(file.size),
                                          sha256: await sha256(buffer), idempotency_key: `console-upload-${crypto.randomUUID()}` });
      const resp = await fetch(`${base}/uploads`, { method: "POST", body: start, headers: { Accept: "application/json" } });
      const session = await resp.json();
      if (session.error) throw new Error(session.error);
      note.textContent = "uploading";
      await put(session.url, session.headers, buffer, progress);
      note.textContent = "processing";
      const media = await ready(session.id, note);
      note.textContent = "ready";
      document.getElementById("no-media")?.remove();
      const item = document.createElement("li");
      const box = Object.assign(document.createElement("input"), { type: "checkbox", name: "media_ids", value: media.id, id: `m-${media.id}`, checked: true });
      const label = document.createElement("label");
      label.htmlFor = box.id;
      if (media.thumbnail) label.append(Object.assign(document.createElement("img"), { src: media.thumbnail, alt: "", width: 48, height: 48 }), " ");
      label.append(media.file_name);
      item.append(box, " ", label);
      document.getElementById("library").prepend(item);
      soon();
    } catch (err) {
      note.textContent = err.message;
      row.classList.add("failed");
    }
  }

  form.querySelectorAll(".js-only").forEach((el) => { el.hidden = false; });
  form.addEventListener("input", soon);
  form.addEventListener("change", (event) => {
    const target = event.target;
    if (target.id === "upload") { [...target.files].slice(0, 10).forEach(upload); target.value = ""; return; }
    if (target.name === "integration_ids") loadOptions(target);
    showChosen();
    soon();
  });
  showChosen();
  soon();
})();
