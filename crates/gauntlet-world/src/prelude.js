// gauntlet's script prelude: the `ctx` handed to every handler, and the harness's entry points.
// It runs in the state realm, where the world's state is loaded once and lent to one trial at a
// time (records frozen, intrinsics locked down): evaluated there once, it gives the function that
// opens a trial in the trial's own realm. The trial sees the state through proxies that note the
// records a call reads or writes (access events, state changes, rollback on error) and copy a
// record on its first write access, so that the state is the same for the next trial once
// `__gauntlet_reset` puts the originals back. Nothing here uses what the world's script can
// reach: the state realm's intrinsics are frozen, and the trial's are never used.
(function (raw, order) {
  "use strict";
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const defineProp = Reflect.defineProperty;
  const deleteProp = Reflect.deleteProperty;
  const ownDesc = Reflect.getOwnPropertyDescriptor;
  const ownKeys = Reflect.ownKeys;
  const isFrozen = Object.isFrozen;
  const isArray = Array.isArray;
  const hasOwn = Function.prototype.call.bind(Object.prototype.hasOwnProperty);
  const keysOf = (target) => order.get(target);
  // Opens a trial on its realm's global object `G`, with the trial's context.
  return function openTrial(G, infoJson) {
  const info = parse(infoJson);
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
  // What this trial replaced, added or removed in the shared state (the root's keys and each
  // collection's records), with the property as it was: put back when the trial ends. Plain
  // arrays and a null-prototype object, so that nothing the world's script replaces is used.
  const saved = [];
  const savedIds = Object.create(null);
  // Objects of the shared state that lost a property: their keys' order is put back at the end.
  const reordered = [];
  function save(target, coll, key) {
    const id = coll + "\u0000" + key;
    if (savedIds[id] === true) return;
    savedIds[id] = true;
    saved[saved.length] = { target: target, coll: coll, key: key, desc: ownDesc(target, key) };
  }
  const open = (value) => ({ value: value, writable: true, enumerable: true, configurable: true });
  // The first write access to a frozen record of the shared state: this trial's own copy.
  function own(target, coll, key, value) {
    save(target, coll, key);
    const copy = parse(stringify(value));
    defineProp(target, key, open(copy));
    return copy;
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
  // Traps both proxies share: what a trial may not do to the shared state's objects (their
  // prototype, their extensibility, symbol-keyed or non-configurable properties) is refused.
  const refuse = () => false;
  // A property defined on the shared state stays configurable (so that the trial's end can
  // take it back); one defined non-configurable on purpose is refused.
  function configurable(d) {
    const out = { configurable: true };
    const fields = ["value", "writable", "get", "set", "enumerable"];
    for (let i = 0; i < fields.length; i++) if (hasOwn(d, fields[i])) out[fields[i]] = d[fields[i]];
    return out;
  }
  function watch(coll, target) {
    if (collections.has(coll)) return collections.get(coll);
    const p = new Proxy(target, {
      get(t, k) {
        const v = t[k];
        if (typeof k === "string" && v !== null && typeof v === "object") {
          touch(coll, k, v);
          if (tracking && isFrozen(v) && hasOwn(t, k)) return own(t, coll, k, v);
        }
        return v;
      },
      getOwnPropertyDescriptor(t, k) {
        if (typeof k === "string" && tracking) {
          const v = t[k];
          if (v !== null && typeof v === "object" && isFrozen(v) && hasOwn(t, k)) { touch(coll, k, v); own(t, coll, k, v); }
        }
        return ownDesc(t, k);
      },
      set(t, k, v) {
        if (typeof k !== "string") return false;
        touch(coll, k, t[k]);
        save(t, coll, k);
        return defineProp(t, k, open(v));
      },
      defineProperty(t, k, d) {
        if (typeof k !== "string" || d.configurable === false) return false;
        touch(coll, k, t[k]);
        save(t, coll, k);
        return defineProp(t, k, configurable(d));
      },
      deleteProperty(t, k) {
        if (typeof k !== "string") return false;
        touch(coll, k, t[k]);
        save(t, coll, k);
        reordered[reordered.length] = t;
        return deleteProp(t, k);
      },
      preventExtensions: refuse,
      setPrototypeOf: refuse,
    });
    collections.set(coll, p);
    return p;
  }
  const state = new Proxy(raw, {
    get(t, k) {
      const v = t[k];
      if (typeof k !== "string" || v === null || typeof v !== "object") return v;
      if (!isArray(v)) return watch(k, v);
      touch("", k, v);
      return tracking && isFrozen(v) && hasOwn(t, k) ? own(t, "", k, v) : v;
    },
    set(t, k, v) {
      if (typeof k !== "string") return false;
      touch("", k, t[k]);
      save(t, "", k);
      collections.delete(k);
      return defineProp(t, k, open(v));
    },
    defineProperty(t, k, d) {
      if (typeof k !== "string" || d.configurable === false) return false;
      touch("", k, t[k]);
      save(t, "", k);
      collections.delete(k);
      return defineProp(t, k, configurable(d));
    },
    deleteProperty(t, k) {
      if (typeof k !== "string") return false;
      touch("", k, t[k]);
      save(t, "", k);
      collections.delete(k);
      reordered[reordered.length] = t;
      return deleteProp(t, k);
    },
    preventExtensions: refuse,
    setPrototypeOf: refuse,
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
      if (t.before === undefined) deleteProp(target, t.key);
      else defineProp(target, t.key, open(parse(t.before)));
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
  // What the trial changed, as it is now: [collection ("" for the root), key, present, JSON].
  fixed("__gauntlet_changed", function () {
    const out = [];
    for (let i = 0; i < saved.length; i++) {
      const s = saved[i];
      const target = s.coll === "" ? raw : raw[s.coll];
      if (s.coll !== "" && (target === null || typeof target !== "object" || isArray(target))) continue;
      // As JSON.stringify sees it: a property that is not enumerable is not there.
      const d = ownDesc(target, s.key);
      const present = d !== undefined && d.enumerable === true;
      out[out.length] = [s.coll, s.key, present, present ? stringify(target[s.key]) : null];
    }
    return stringify(out);
  });
  // Puts the shared state back as the trial found it (latest change first); a collection that
  // lost one of its records gets its keys back in their order. True when it is whole again.
  fixed("__gauntlet_reset", function () {
    for (let i = saved.length - 1; i >= 0; i--) {
      const s = saved[i];
      if (s.desc === undefined) {
        if (!deleteProp(s.target, s.key)) return false;
      } else if (!defineProp(s.target, s.key, s.desc)) return false;
    }
    for (let i = 0; i < reordered.length; i++) {
      const target = reordered[i];
      const names = keysOf(target);
      // Not an object the state was loaded with: the trial made it, and it is gone now.
      if (names === undefined) continue;
      const values = [];
      for (let j = 0; j < names.length; j++) values[j] = ownDesc(target, names[j]);
      const all = ownKeys(target);
      for (let j = 0; j < all.length; j++) deleteProp(target, all[j]);
      for (let j = 0; j < names.length; j++) if (values[j] === undefined || !defineProp(target, names[j], values[j])) return false;
    }
    saved.length = 0;
    reordered.length = 0;
    return ownKeys(raw).length === keysOf(raw).length;
  });
  fixed("__gauntlet_tenant", function (coll, key, field) {
    const c = coll === "" ? raw : raw[coll];
    const r = c && c[key];
    return r && typeof r === "object" && r[field] !== undefined ? String(r[field]) : "";
  });
  };
})
