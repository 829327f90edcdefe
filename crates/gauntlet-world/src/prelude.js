// gauntlet's script prelude: the sandbox and the `ctx` handed to every handler. The world's state
// lives here for the whole trial; each top-level collection is watched so that the records a call
// reads or writes are known (access events, state changes, rollback on error).
(function () {
  "use strict";
  const G = globalThis;
  // The harness's own JSON functions, taken before the world's script can replace them.
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const raw = parse(G.__state_json);
  delete G.__state_json;
  const info = parse(G.__info_json);
  delete G.__info_json;
  // The clock and Math.random are gone already (sandbox.js); ctx.now and ctx.random() stand in.
  let seed = info.seed >>> 0;
  function random() {
    // mulberry32, seeded per trial
    seed = (seed + 0x6D2B79F5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  let touched = new Map();
  let effects = [];
  // Calls of read tools note the records they touch but take no snapshots (a scan of a large
  // table would copy it whole): their writes are not listed as state changes.
  const UNTRACKED = {};
  let tracking = true;
  function touch(coll, key, value) {
    const id = coll + "\u0000" + key;
    if (!touched.has(id)) {
      const before = !tracking ? UNTRACKED : value === undefined ? undefined : stringify(value);
      touched.set(id, { coll: coll, key: key, before: before });
    }
  }
  const collections = new Map();
  function watch(coll, target) {
    if (collections.has(coll)) return collections.get(coll);
    const p = new Proxy(target, {
      get(t, k) {
        const v = t[k];
        if (typeof k === "string" && v !== null && typeof v === "object") touch(coll, k, v);
        return v;
      },
      set(t, k, v) {
        if (typeof k === "string") touch(coll, k, t[k]);
        t[k] = v;
        return true;
      },
      deleteProperty(t, k) {
        if (typeof k === "string") touch(coll, k, t[k]);
        delete t[k];
        return true;
      },
    });
    collections.set(coll, p);
    return p;
  }
  const state = new Proxy(raw, {
    get(t, k) {
      const v = t[k];
      return typeof k === "string" && v !== null && typeof v === "object" && !Array.isArray(v) ? watch(k, v) : v;
    },
    set(t, k, v) {
      if (typeof k === "string") touch("", k, t[k]);
      collections.delete(k);
      t[k] = v;
      return true;
    },
  });
  function ToolError(status, message) {
    this.status = status;
    this.message = message;
  }
  const ctx = {
    state: state,
    user: info.user,
    tenant: info.tenant,
    roles: info.roles,
    scopes: info.scopes,
    now: info.now,
    random: random,
    error: function (status, message) { return new ToolError(status, message); },
    sideEffect: function (description) { effects.push(String(description)); },
    access: function (coll, key) { const c = raw[coll]; touch(coll, String(key), c ? c[key] : undefined); },
  };
  function restore() {
    for (const t of touched.values()) {
      const target = t.coll === "" ? raw : raw[t.coll];
      if (!target || t.before === UNTRACKED) continue;
      if (t.before === undefined) delete target[t.key];
      else target[t.key] = parse(t.before);
    }
    collections.clear();
  }
  // The harness's entry points: fixed, so that a script cannot replace them and forge what the
  // harness reads (a tool's result, the final state, a record's tenant).
  const fixed = (name, f) => Object.defineProperty(G, name, { value: f, writable: false, configurable: false, enumerable: false });
  fixed("__gauntlet_call", function (name, argsJson, readOnly) {
    tracking = !readOnly;
    touched = new Map();
    effects = [];
    const handler = G[name];
    let out;
    try {
      if (typeof handler !== "function") throw new ToolError(500, "the world's script defines no handler `" + name + "`");
      const result = handler(parse(argsJson), ctx);
      // An async handler's promise would serialise as {} and lose what it does after awaiting.
      if (result && typeof result.then === "function") throw new Error("handler `" + name + "` returned a promise: world handlers must be synchronous");
      out = { ok: result === undefined ? null : result };
    } catch (e) {
      restore();
      if (e instanceof ToolError && Number.isInteger(e.status) && e.status >= 100 && e.status <= 599) out = { err: { status: e.status, message: String(e.message) } };
      else if (e instanceof ToolError) out = { err: { status: 500, message: "handler `" + name + "` raised status " + String(e.status) + ", which is not an HTTP status (100-599): " + String(e.message) } };
      else out = { err: { status: 500, message: "handler error: " + String(e && e.message || e) + (e && e.stack ? " at " + String(e.stack).trim().split("\n")[0].trim() : "") } };
    }
    const changes = [];
    const accesses = [];
    for (const t of touched.values()) {
      accesses.push([t.coll, t.key]);
      if (out.err || t.before === UNTRACKED) continue;
      const target = t.coll === "" ? raw : raw[t.coll];
      const now = target && t.key in target ? stringify(target[t.key]) : undefined;
      if (now !== t.before) changes.push([t.coll, t.key, t.before === undefined ? null : t.before, now === undefined ? null : now]);
    }
    out.changes = changes;
    out.accesses = accesses;
    out.effects = effects;
    return stringify(out);
  });
  fixed("__gauntlet_state", function () { return stringify(raw); });
  fixed("__gauntlet_tenant", function (coll, key, field) {
    const c = coll === "" ? raw : raw[coll];
    const r = c && c[key];
    return r && typeof r === "object" && r[field] !== undefined ? String(r[field]) : "";
  });
})();
