// The tau-bench retail domain's tools, re-implemented from their documented semantics for
// gauntlet's script worlds. The state has tau-bench's three tables: orders, products, users.
// A tool's refusal ("Error: ...") is a tool error the agent sees; it never leaves a partial write.
// Read tools return the JSON values tau-bench serialises; text tools return their text.

function fail(ctx, message) {
  return ctx.error(400, "Error: " + message);
}

// Python's round(x, 2): the nearest hundredth of the exact binary value, ties to even.
function round2(x) {
  const y = x * 100;
  if (Number.isInteger(y * 2) && !Number.isInteger(y)) {
    const down = Math.floor(y);
    return (down % 2 === 0 ? down : down + 1) / 100;
  }
  return Number(x.toFixed(2));
}

function count(list, v) {
  return list.filter((x) => x === v).length;
}

function order_of(ctx, id) {
  const orders = ctx.state.orders;
  if (!(id in orders)) throw fail(ctx, "order not found");
  return orders[id];
}

function payment_method_of(ctx, order, id) {
  const methods = ctx.state.users[order.user_id].payment_methods;
  if (!(id in methods)) throw fail(ctx, "payment method not found");
  return methods[id];
}

// Checks that every item to change is in the order (duplicates counted) and that each new item
// is an available variant of the same product; the total price difference.
function price_difference(ctx, order, item_ids, new_item_ids) {
  const products = ctx.state.products;
  const all = order.items.map((i) => i.item_id);
  for (const id of item_ids) {
    if (count(item_ids, id) > count(all, id)) throw fail(ctx, id + " not found");
  }
  if (item_ids.length !== new_item_ids.length) throw fail(ctx, "the number of items to be exchanged should match");
  let diff = 0;
  item_ids.forEach((id, k) => {
    const item = order.items.find((i) => i.item_id === id);
    const variants = products[item.product_id].variants;
    const wanted = new_item_ids[k];
    if (!(wanted in variants && variants[wanted].available)) throw fail(ctx, "new item " + wanted + " not found or available");
    diff += variants[wanted].price - item.price;
  });
  return diff;
}

function address(a) {
  return { address1: a.address1, address2: a.address2, city: a.city, state: a.state, country: a.country, zip: a.zip };
}

function calculate(a, ctx) {
  const e = String(a.expression);
  for (const c of e) if ("0123456789+-*/(). ".indexOf(c) < 0) throw fail(ctx, "invalid characters in expression");
  let v;
  try {
    v = Function('"use strict"; return (' + e + ");")();
  } catch (err) {
    throw fail(ctx, "invalid syntax");
  }
  if (!isFinite(v)) throw fail(ctx, "division by zero");
  const r = round2(Number(v));
  return Number.isInteger(r) ? r.toFixed(1) : String(r);
}

function cancel_pending_order(a, ctx) {
  const order = order_of(ctx, a.order_id);
  if (order.status !== "pending") throw fail(ctx, "non-pending order cannot be cancelled");
  if (a.reason !== "no longer needed" && a.reason !== "ordered by mistake") throw fail(ctx, "invalid reason");
  const refunds = [];
  for (const p of order.payment_history) {
    refunds.push({ transaction_type: "refund", amount: p.amount, payment_method_id: p.payment_method_id });
    if (p.payment_method_id.indexOf("gift_card") >= 0) {
      // refunds to a gift card are immediate
      const m = ctx.state.users[order.user_id].payment_methods[p.payment_method_id];
      m.balance = round2(m.balance + p.amount);
    }
  }
  order.status = "cancelled";
  order.cancel_reason = a.reason;
  for (const r of refunds) order.payment_history.push(r);
  return order;
}

function exchange_delivered_order_items(a, ctx) {
  const order = order_of(ctx, a.order_id);
  if (order.status !== "delivered") throw fail(ctx, "non-delivered order cannot be exchanged");
  const diff = round2(price_difference(ctx, order, a.item_ids, a.new_item_ids));
  const m = payment_method_of(ctx, order, a.payment_method_id);
  if (m.source === "gift_card" && m.balance < diff) throw fail(ctx, "insufficient gift card balance to pay for the price difference");
  order.status = "exchange requested";
  order.exchange_items = a.item_ids.slice().sort();
  order.exchange_new_items = a.new_item_ids.slice().sort();
  order.exchange_payment_method_id = a.payment_method_id;
  order.exchange_price_difference = diff;
  return order;
}

function find_user_id_by_email(a, ctx) {
  const email = String(a.email).toLowerCase();
  for (const [id, u] of Object.entries(ctx.state.users)) {
    if (u.email.toLowerCase() === email) return id;
  }
  throw fail(ctx, "user not found");
}

function find_user_id_by_name_zip(a, ctx) {
  const first = String(a.first_name).toLowerCase(), last = String(a.last_name).toLowerCase();
  for (const [id, u] of Object.entries(ctx.state.users)) {
    if (u.name.first_name.toLowerCase() === first && u.name.last_name.toLowerCase() === last && u.address.zip === a.zip) return id;
  }
  throw fail(ctx, "user not found");
}

function get_order_details(a, ctx) {
  return order_of(ctx, a.order_id);
}

function get_product_details(a, ctx) {
  const products = ctx.state.products;
  if (!(a.product_id in products)) throw fail(ctx, "product not found");
  return products[a.product_id];
}

// tau2-bench's retail adds this read: an item (a product variant) by its id.
function get_item_details(a, ctx) {
  for (const p of Object.values(ctx.state.products)) {
    if (a.item_id in p.variants) return p.variants[a.item_id];
  }
  throw fail(ctx, "item not found");
}

function get_user_details(a, ctx) {
  const users = ctx.state.users;
  if (!(a.user_id in users)) throw fail(ctx, "user not found");
  return users[a.user_id];
}

function list_all_product_types(a, ctx) {
  const byName = {};
  for (const p of Object.values(ctx.state.products)) byName[p.name] = p.product_id;
  const out = {};
  for (const name of Object.keys(byName).sort()) out[name] = byName[name];
  return out;
}

function modify_pending_order_address(a, ctx) {
  const order = order_of(ctx, a.order_id);
  if (order.status !== "pending") throw fail(ctx, "non-pending order cannot be modified");
  order.address = address(a);
  return order;
}

function modify_pending_order_items(a, ctx) {
  const order = order_of(ctx, a.order_id);
  if (order.status !== "pending") throw fail(ctx, "non-pending order cannot be modified");
  const diff = price_difference(ctx, order, a.item_ids, a.new_item_ids);
  const m = payment_method_of(ctx, order, a.payment_method_id);
  if (m.source === "gift_card" && m.balance < diff) throw fail(ctx, "insufficient gift card balance to pay for the new item");
  order.payment_history.push({
    transaction_type: diff > 0 ? "payment" : "refund",
    amount: Math.abs(diff),
    payment_method_id: a.payment_method_id,
  });
  if (m.source === "gift_card") m.balance = round2(m.balance - diff);
  const products = ctx.state.products;
  a.item_ids.forEach((id, k) => {
    const item = order.items.find((i) => i.item_id === id);
    const variant = products[item.product_id].variants[a.new_item_ids[k]];
    item.item_id = a.new_item_ids[k];
    item.price = variant.price;
    item.options = variant.options;
  });
  order.status = "pending (item modified)";
  return order;
}

function modify_pending_order_payment(a, ctx) {
  const order = order_of(ctx, a.order_id);
  if (order.status !== "pending") throw fail(ctx, "non-pending order cannot be modified");
  const m = payment_method_of(ctx, order, a.payment_method_id);
  const history = order.payment_history;
  if (history.length > 1 || history[0].transaction_type !== "payment") throw fail(ctx, "there should be exactly one payment for a pending order");
  const old = history[0].payment_method_id;
  if (old === a.payment_method_id) throw fail(ctx, "the new payment method should be different from the current one");
  const amount = history[0].amount;
  if (m.source === "gift_card" && m.balance < amount) throw fail(ctx, "insufficient gift card balance to pay for the order");
  history.push({ transaction_type: "payment", amount: amount, payment_method_id: a.payment_method_id });
  history.push({ transaction_type: "refund", amount: amount, payment_method_id: old });
  if (m.source === "gift_card") m.balance = round2(m.balance - amount);
  if (old.indexOf("gift_card") >= 0) {
    const o = ctx.state.users[order.user_id].payment_methods[old];
    o.balance = round2(o.balance + amount);
  }
  return order;
}

function modify_user_address(a, ctx) {
  const users = ctx.state.users;
  if (!(a.user_id in users)) throw fail(ctx, "user not found");
  users[a.user_id].address = address(a);
  return users[a.user_id];
}

function return_delivered_order_items(a, ctx) {
  const order = order_of(ctx, a.order_id);
  if (order.status !== "delivered") throw fail(ctx, "non-delivered order cannot be returned");
  payment_method_of(ctx, order, a.payment_method_id);
  if (a.payment_method_id.indexOf("gift_card") < 0 && a.payment_method_id !== order.payment_history[0].payment_method_id) {
    throw fail(ctx, "payment method should be either the original payment method or a gift card");
  }
  const all = order.items.map((i) => i.item_id);
  for (const id of a.item_ids) {
    if (count(a.item_ids, id) > count(all, id)) throw fail(ctx, "some item not found");
  }
  order.status = "return requested";
  order.return_items = a.item_ids.slice().sort();
  order.return_payment_method_id = a.payment_method_id;
  return order;
}

function think(a, ctx) {
  return "";
}

function transfer_to_human_agents(a, ctx) {
  return "Transfer successful";
}
