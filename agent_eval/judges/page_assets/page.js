// The labelling page of `agent-eval label RUN` (agent_eval/judges/page.py states the rules).
// Run text (user turns, agent answers, rationales, notes) is untrusted: it only ever goes in as textContent.
// Every change is sent at once, one request after the other (in the order given), and the page shows a label
// only once the store has it. `window.labellingPage` lets a caller wait: `loaded` (the items are rendered) and
// `settled()` (every change sent so far has an answer).
(function () {
  "use strict";

  const state = {
    items: [],
    views: [],
    byKey: new Map(), // item key -> indices of the items with that key (one label covers them all)
    labels: new Map(), // item key -> this labeller's label, as stored
    scored: new Set(), // metrics with a score between 0 and 1 somewhere: they get a score input
    filter: "all",
    visible: [],
    current: -1,
    undo: [], // {key, previous, failed}: the changes that can be undone, the last one last
    queue: Promise.resolve(),
    pending: 0,
  };
  const timings = {};
  let loadedResolve;
  window.labellingPage = {
    loaded: new Promise((resolve) => { loadedResolve = resolve; }),
    settled: () => state.queue,
    timings: timings,
  };

  // ------------------------------------------------------------------------------------------------- helpers
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function number(value) {
    return value === null || value === undefined ? "—" : String(Math.round(value * 1000) / 1000);
  }

  function time(iso) {
    const when = iso ? new Date(iso) : new Date();
    return isNaN(when.getTime()) ? "" : when.toLocaleString();
  }

  function setStatus(text, failed) {
    const status = document.getElementById("status");
    status.textContent = text;
    status.classList.toggle("failed", !!failed);
  }

  async function request(method, url, body) {
    const options = { method: method, headers: { Accept: "application/json" } };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(url, options);
    } catch (error) {
      throw new Error("the page's server does not answer (is `agent-eval label` still running?)");
    }
    let answer = null;
    try {
      answer = await response.json();
    } catch (error) {
      answer = null;
    }
    if (!response.ok) throw new Error((answer && answer.error) || "HTTP " + response.status);
    return answer;
  }

  // ------------------------------------------------------------------------------------------------ verdicts
  function humanPassed(item, label) {
    if (!label) return null;
    if (label.passed !== null && label.passed !== undefined) return label.passed;
    if (label.score !== null && label.score !== undefined) return label.score >= item.threshold;
    return null;
  }

  function disagrees(item) {
    const human = humanPassed(item, state.labels.get(item.item_key));
    return human !== null && item.judge_passed !== null && human !== item.judge_passed;
  }

  function matches(item, filter) {
    if (filter === "unlabelled") return !state.labels.get(item.item_key);
    if (filter === "disagreements") return disagrees(item);
    return true;
  }

  function binary(value) {
    return value === null || value === undefined || value === 0 || value === 1;
  }

  // ------------------------------------------------------------------------------------------------- drawing
  function calls(list, absent) {
    if (list === null || list === undefined) return el("p", "none", absent);
    if (!list.length) return el("p", "none", "none");
    const ol = el("ol", "calls");
    for (const call of list) {
      const li = el("li");
      li.appendChild(el("code", null, call.name));
      li.appendChild(el("pre", null, JSON.stringify(call.args || {}, null, 1)));
      ol.appendChild(li);
    }
    return ol;
  }

  function message(role, who, text) {
    const box = el("div", "message " + role);
    box.appendChild(el("h3", null, who));
    box.appendChild(text ? el("p", "text", text) : el("p", "none", "(no text)"));
    return box;
  }

  function samplesTable(samples) {
    const table = el("table", "samples");
    const head = el("tr");
    for (const name of ["#", "score", "label", "rationale"]) head.appendChild(el("th", null, name));
    table.appendChild(el("thead")).appendChild(head);
    const body = table.appendChild(el("tbody"));
    samples.forEach((sample, i) => {
      const row = el("tr");
      row.appendChild(el("td", null, i + 1));
      row.appendChild(el("td", null, number(sample.score)));
      row.appendChild(el("td", null, sample.label || ""));
      const why = el("td", "rationale", sample.error ? "unusable: " + sample.error : sample.rationale || "");
      if (sample.error) why.classList.add("failed");
      row.appendChild(why);
      body.appendChild(row);
    });
    return table;
  }

  function judgeVerdict(item) {
    if (item.judge_passed === null) return el("span", "verdict", "judge: no verdict");
    const verdict = item.judge_passed ? "pass" : "fail";
    return el("span", "verdict " + verdict, "judge: " + verdict);
  }

  function drawItem(item, index) {
    const view = {};
    const root = el("article", "item");
    root.id = "item-" + index;
    root.tabIndex = -1;
    root.dataset.index = String(index);
    root.dataset.key = item.item_key;
    root.setAttribute("aria-labelledby", "item-title-" + index);

    const title = el("h2");
    title.id = "item-title-" + index;
    title.appendChild(el("span", "number", "#" + (index + 1)));
    const rubricName = item.rubric_id !== null ? " · rubric " + item.rubric_id : "";
    title.appendChild(el("span", "metric", item.metric + rubricName));
    const where = item.eval_set_id + " / " + item.eval_id + " · run " + (item.run_index + 1) + " · turn " +
      (item.turn + 1) + " of " + Math.max(item.turns, item.turn + 1);
    title.appendChild(el("span", "where", where));
    title.appendChild(judgeVerdict(item));
    view.disagree = title.appendChild(el("span", "disagree", "you disagree with the judge"));
    view.disagree.hidden = true;
    root.appendChild(title);

    if (item.rubric_id !== null) {
      const rubric = el("p", "rubric");
      rubric.appendChild(el("b", null, "Rubric: "));
      rubric.appendChild(document.createTextNode(item.rubric || "(its text is not stored: " + item.rubric_id + ")"));
      root.appendChild(rubric);
    }
    if (item.history.length) {
      const history = el("details", "history");
      history.appendChild(el("summary", null, "Earlier turns (" + item.history.length + ")"));
      item.history.forEach((pair, i) => {
        history.appendChild(message("user", "User, turn " + (i + 1), pair[0]));
        history.appendChild(message("agent", "Agent, turn " + (i + 1), pair[1]));
      });
      root.appendChild(history);
    }

    const columns = el("div", "columns");
    const made = columns.appendChild(el("div", "made"));
    made.appendChild(message("user", "User", item.user));
    const answer = made.appendChild(message("agent", "Agent's answer", item.response));
    answer.classList.add("response");
    made.appendChild(el("h3", null, "Tool calls"));
    made.appendChild(calls(item.tool_calls, "none"));
    const reference = columns.appendChild(el("div", "reference"));
    reference.appendChild(el("h3", null, "Reference answer"));
    reference.appendChild(item.reference === null ? el("p", "none", "no reference") : el("p", "text", item.reference));
    reference.appendChild(el("h3", null, "Expected tool calls"));
    reference.appendChild(calls(item.expected_tool_calls, "no reference"));
    root.appendChild(columns);

    root.appendChild(el("h3", null, "Judge"));
    const facts = ["score " + number(item.judge_score) + " (passes at " + number(item.threshold) + ")"];
    if (item.judge_model) facts.push(item.judge_model);
    if (item.judge_mode) facts.push(item.judge_mode + " mode");
    root.appendChild(el("p", "facts", facts.join(" · ")));
    root.appendChild(item.rationale ? el("p", "text rationale", item.rationale) : el("p", "none", "no rationale"));
    if (item.samples.length) root.appendChild(samplesTable(item.samples));

    const actions = el("div", "actions");
    actions.setAttribute("role", "group");
    actions.setAttribute("aria-label", "Your label of item " + (index + 1));
    view.pass = actions.appendChild(el("button", "pass", "Pass"));
    view.fail = actions.appendChild(el("button", "fail", "Fail"));
    for (const button of [view.pass, view.fail]) {
      button.type = "button";
      button.setAttribute("aria-pressed", "false");
    }
    view.pass.setAttribute("aria-keyshortcuts", "p");
    view.fail.setAttribute("aria-keyshortcuts", "f");
    view.pass.addEventListener("click", () => give(index, true));
    view.fail.addEventListener("click", () => give(index, false));
    if (state.scored.has(item.metric) && item.rubric_id === null) {
      const label = actions.appendChild(el("label", null, "Score "));
      view.score = label.appendChild(el("input", "score"));
      view.score.type = "number";
      view.score.step = "any";
      view.score.addEventListener("change", () => rescore(index));
    }
    const noteLabel = actions.appendChild(el("label", null, "Note "));
    view.note = noteLabel.appendChild(el("input", "note"));
    view.note.type = "text";
    view.note.maxLength = 10000;
    view.note.addEventListener("change", () => renote(index));
    view.clear = actions.appendChild(el("button", "clear", "Clear label"));
    view.clear.type = "button";
    view.clear.addEventListener("click", () => clear(index));
    view.save = actions.appendChild(el("span", "save"));
    view.save.setAttribute("role", "status");
    root.appendChild(actions);

    if (item.other_labels) {
      const people = item.other_labels === 1 ? "1 other person has" : item.other_labels + " other people have";
      root.appendChild(el("p", "others", people + " labelled this item."));
    }
    const shared = state.byKey.get(item.item_key).length;
    if (shared > 1) {
      const text = "The same content was judged " + shared + " times in this run: one label covers all " + shared + ".";
      root.appendChild(el("p", "shared", text));
    }
    root.addEventListener("focusin", () => select(index, false));
    root.addEventListener("mousedown", () => select(index, false));
    view.root = root;
    return view;
  }

  function showLabel(index) {
    const item = state.items[index];
    const view = state.views[index];
    const label = state.labels.get(item.item_key) || null;
    const human = humanPassed(item, label);
    view.pass.setAttribute("aria-pressed", String(!!label && label.passed === true));
    view.fail.setAttribute("aria-pressed", String(!!label && label.passed === false));
    view.root.classList.toggle("labelled-pass", human === true);
    view.root.classList.toggle("labelled-fail", human === false);
    view.root.classList.toggle("labelled", !!label);
    view.disagree.hidden = !disagrees(item);
    view.clear.disabled = !label;
    if (view.note !== document.activeElement) view.note.value = (label && label.note) || "";
    if (view.score && view.score !== document.activeElement) {
      view.score.value = label && label.score !== null && label.score !== undefined ? String(label.score) : "";
    }
  }

  function showSave(key, text, kind) {
    for (const index of state.byKey.get(key)) {
      const save = state.views[index].save;
      save.textContent = text;
      save.className = "save" + (kind ? " " + kind : "");
    }
  }

  function showCounts() {
    const total = state.items.length;
    let labelled = 0;
    let disagreeing = 0;
    for (const item of state.items) {
      if (state.labels.get(item.item_key)) labelled += 1;
      if (disagrees(item)) disagreeing += 1;
    }
    let text = labelled + " of " + total + " labelled";
    if (disagreeing) {
      text += " · " + disagreeing + (disagreeing === 1 ? " disagreement" : " disagreements") + " with the judge";
    }
    document.getElementById("counter").textContent = text;
    const counts = { all: total, unlabelled: total - labelled, disagreements: disagreeing };
    for (const node of document.querySelectorAll("[data-count]")) node.textContent = String(counts[node.dataset.count]);
    document.getElementById("undo").disabled = !state.undo.length;
  }

  // ------------------------------------------------------------------------------------- filter and moving
  function applyFilter(filter) {
    state.filter = filter;
    state.visible = [];
    state.items.forEach((item, index) => {
      const shown = matches(item, filter);
      state.views[index].root.hidden = !shown;
      if (shown) state.visible.push(index);
    });
    for (const button of document.querySelectorAll("#filters button")) {
      button.setAttribute("aria-pressed", String(button.dataset.filter === filter));
    }
    document.getElementById("empty").hidden = state.visible.length > 0;
    if (state.visible.indexOf(state.current) < 0) select(state.visible.length ? state.visible[0] : -1, false);
  }

  function select(index, scroll) {
    if (state.current >= 0 && state.current !== index) {
      state.views[state.current].root.classList.remove("current");
      state.views[state.current].root.removeAttribute("aria-current");
    }
    state.current = index;
    if (index < 0) return;
    const root = state.views[index].root;
    root.classList.add("current");
    root.setAttribute("aria-current", "true");
    if (scroll) {
      root.scrollIntoView({ block: "start" });
      root.focus({ preventScroll: true });
    }
  }

  function move(step) {
    if (!state.visible.length) return;
    const at = state.visible.indexOf(state.current);
    const next = at < 0 ? 0 : Math.min(Math.max(at + step, 0), state.visible.length - 1);
    select(state.visible[next], true);
  }

  // ---------------------------------------------------------------------------------------------- changes
  function enqueue(task) {
    state.pending += 1;
    const done = state.queue.then(task).catch(() => undefined).then(() => {
      state.pending -= 1;
    });
    state.queue = done;
    return done;
  }

  // Send what `compute(previous)` gives for the item `key` once the changes before it are answered: a label,
  // null (remove the label) or undefined (send nothing); `previous` is the label as stored then. `entry` (an
  // undo entry) learns the label it replaced, and is marked failed if the store did not take the change.
  function change(key, compute, entry, what) {
    showSave(key, "Saving…", "saving");
    return enqueue(async () => {
      const previous = state.labels.get(key) || null;
      const body = compute(previous);
      if (entry) entry.previous = previous;
      try {
        if (body === undefined) {
          showSave(key, "Nothing to undo: that change was not saved", "");
          return;
        }
        if (body === null) {
          const answer = await request("DELETE", "api/labels/" + encodeURIComponent(key));
          state.labels.delete(key);
          showSave(key, answer.deleted ? "Label removed" : "There was no label to remove", "saved");
        } else {
          const answer = await request("POST", "api/labels", Object.assign({ item_key: key }, body));
          state.labels.set(key, answer.label);
          showSave(key, "Saved " + time(answer.label.labelled_at), "saved");
        }
        setStatus(what + ": saved");
      } catch (error) {
        if (entry) {
          entry.failed = true;
          if (state.undo.indexOf(entry) >= 0) state.undo.splice(state.undo.indexOf(entry), 1);
        }
        showSave(key, "Not saved: " + error.message, "failed");
        setStatus(what + ": NOT saved (" + error.message + ")", true);
      } finally {
        for (const index of state.byKey.get(key)) showLabel(index);
        showCounts();
      }
    });
  }

  function remember(key) {
    const entry = { key: key, previous: null, failed: false };
    state.undo.push(entry);
    document.getElementById("undo").disabled = false;
    return entry;
  }

  function verdictBody(index, passed) {
    const view = state.views[index];
    const body = { passed: passed, note: view.note.value.trim() || null };
    if (view.score && view.score.value.trim() !== "" && isFinite(Number(view.score.value))) {
      body.score = Number(view.score.value);
    }
    return body;
  }

  function give(index, passed) {
    if (index < 0) return;
    const key = state.items[index].item_key;
    const body = verdictBody(index, passed);
    change(key, () => body, remember(key), "#" + (index + 1) + " " + (passed ? "pass" : "fail"));
  }

  function renote(index) {
    const key = state.items[index].item_key;
    const label = state.labels.get(key);
    if (!label) {
      showSave(key, "The note is saved with your verdict", "");
      return;
    }
    const note = state.views[index].note.value.trim() || null;
    const body = { passed: label.passed, score: label.score, note: note };
    change(key, () => body, remember(key), "#" + (index + 1) + " note");
  }

  function rescore(index) {
    const key = state.items[index].item_key;
    const label = state.labels.get(key);
    const input = state.views[index].score.value.trim();
    const score = input === "" ? null : Number(input);
    if (score !== null && !isFinite(score)) {
      showSave(key, "Not saved: the score is not a number", "failed");
      return;
    }
    const passed = label ? label.passed : null;
    if (score === null && (passed === null || passed === undefined)) {
      if (label) change(key, () => null, remember(key), "#" + (index + 1) + " label removed");
      return;
    }
    const note = state.views[index].note.value.trim() || null;
    const body = { passed: passed === undefined ? null : passed, score: score, note: note };
    change(key, () => body, remember(key), "#" + (index + 1) + " score");
  }

  function clear(index) {
    const key = state.items[index].item_key;
    if (state.labels.get(key)) change(key, () => null, remember(key), "#" + (index + 1) + " label removed");
  }

  function undoLast() {
    const entry = state.undo.pop();
    showCounts();
    if (!entry) {
      setStatus("Nothing to undo");
      return;
    }
    const index = state.byKey.get(entry.key)[0];
    if (state.views[index].root.hidden) applyFilter("all");
    select(index, true);
    change(entry.key, () => {
      if (entry.failed) return undefined; // the change never reached the store: nothing to take back
      const previous = entry.previous;
      return previous ? { passed: previous.passed, score: previous.score, note: previous.note } : null;
    }, null, "#" + (index + 1) + " undone");
  }

  // -------------------------------------------------------------------------------------------- keyboard
  function typing(target) {
    const tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  function onKey(event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (event.repeat && (key === "p" || key === "f" || key === "u")) {
      event.preventDefault(); // a held key labels (or undoes) once
    } else if (key === "p" || key === "f") {
      const index = state.current;
      give(index, key === "p");
      if (index >= 0 && state.visible.indexOf(index) < state.visible.length - 1) move(1);
    } else if (key === "j" || key === "ArrowDown" || key === "ArrowRight") {
      move(1);
    } else if (key === "k" || key === "ArrowUp" || key === "ArrowLeft") {
      move(-1);
    } else if (key === "u") {
      undoLast();
    } else {
      return;
    }
    event.preventDefault();
  }

  // ------------------------------------------------------------------------------------------------ start
  function start(data) {
    timings.items = performance.now();
    document.getElementById("run-id").textContent = data.run_id;
    document.getElementById("labeller").textContent = data.labeller;
    state.items = data.items;
    state.items.forEach((item, index) => {
      if (!state.byKey.has(item.item_key)) state.byKey.set(item.item_key, []);
      state.byKey.get(item.item_key).push(index);
      if (item.label) state.labels.set(item.item_key, item.label);
      if (!binary(item.judge_score) || item.samples.some((sample) => !binary(sample.score))) {
        if (item.rubric_id === null) state.scored.add(item.metric);
      }
    });
    const fragment = document.createDocumentFragment();
    state.views = state.items.map((item, index) => {
      const view = drawItem(item, index);
      fragment.appendChild(view.root);
      return view;
    });
    state.items.forEach((item, index) => {
      showLabel(index);
      if (item.label) showSave(item.item_key, "Labelled " + time(item.label.labelled_at), "");
    });
    document.getElementById("items").appendChild(fragment);
    applyFilter("all");
    showCounts();
    void document.body.offsetHeight; // lay the page out: `rendered` counts it
    timings.rendered = performance.now();
    document.documentElement.dataset.ready = "true";
    loadedResolve(timings);
  }

  document.getElementById("filters").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-filter]");
    if (button) applyFilter(button.dataset.filter);
  });
  document.getElementById("undo").addEventListener("click", undoLast);
  document.addEventListener("keydown", onKey);
  window.addEventListener("beforeunload", (event) => {
    if (state.pending) event.preventDefault(); // a change is still being sent
  });
  timings.script = performance.now();
  request("GET", "api/items")
    .then(start)
    .catch((error) => {
      document.getElementById("counter").textContent = "Could not load the judged items: " + error.message;
      timings.failed = error.message;
      loadedResolve(timings);
    });
})();
