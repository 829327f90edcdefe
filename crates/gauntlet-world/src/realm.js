// The state realm: where a world's state lives between trials. Run once, when the state is
// loaded, before any world code exists. It freezes every record (and every top-level array)
// deep, and then everything else this realm can reach (its intrinsics: Object.prototype,
// Function, ...), so that a trial's code, which meets these objects only through its own realm's
// copy-on-write proxies, can change the state only where the proxies see it and roll it back.
// The root and its collections stay open: records are added and removed through the proxies.
// It returns, per collection and for the root, the keys in their order (restoring a deleted
// record must not move it).
(function (root) {
  "use strict";
  // Being frozen marks an object as done (nothing here is frozen before this runs).
  function harden(start) {
    const stack = [start];
    while (stack.length > 0) {
      const v = stack.pop();
      if (v === null || (typeof v !== "object" && typeof v !== "function") || Object.isFrozen(v)) continue;
      Object.freeze(v);
      for (const k of Reflect.ownKeys(v)) {
        const d = Reflect.getOwnPropertyDescriptor(v, k);
        if ("value" in d) stack.push(d.value);
        else stack.push(d.get, d.set);
      }
      stack.push(Object.getPrototypeOf(v));
    }
  }
  // State data came from JSON: plain objects and arrays, a tree, no accessors.
  function freezeData(v) {
    Object.freeze(v);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const c = v[i];
        if (c !== null && typeof c === "object") freezeData(c);
      }
    } else {
      for (const k in v) {
        const c = v[k];
        if (c !== null && typeof c === "object") freezeData(c);
      }
    }
  }
  const keys = new Map();
  for (const name of Object.keys(root)) {
    const c = root[name];
    if (c === null || typeof c !== "object") continue;
    if (Array.isArray(c)) { freezeData(c); continue; }
    const names = Object.keys(c);
    for (let i = 0; i < names.length; i++) {
      const r = c[names[i]];
      if (r !== null && typeof r === "object") freezeData(r);
    }
    keys.set(c, Object.freeze(names));
  }
  keys.set(root, Object.freeze(Object.keys(root)));
  harden(globalThis);
  return keys;
})
