// The tau-bench airline domain's tools, re-implemented from their documented semantics for
// gauntlet's script worlds. The state has tau-bench's three tables: flights, reservations, users.
// A tool's refusal ("Error: ...") is a tool error the agent sees; it never leaves a partial write.
// Read tools return the JSON values tau-bench serialises; text tools return their text.

function fail(ctx, message) {
  return ctx.error(400, "Error: " + message);
}

function copy(v) {
  return JSON.parse(JSON.stringify(v));
}

// Checks that a flight segment can seat `seats` in `cabin` on its date, fills in its price,
// origin and destination (as tau-bench does), and returns its cost.
function price_flight(ctx, f, cabin, seats) {
  const flights = ctx.state.flights, n = f.flight_number;
  if (!(n in flights)) throw fail(ctx, "flight " + n + " not found");
  const fd = flights[n];
  if (!(f.date in fd.dates)) throw fail(ctx, "flight " + n + " not found on date " + f.date);
  const day = fd.dates[f.date];
  if (day.status !== "available") throw fail(ctx, "flight " + n + " not available on date " + f.date);
  if (day.available_seats[cabin] < seats) throw fail(ctx, "not enough seats on flight " + n);
  f.price = day.prices[cabin];
  f.origin = fd.origin;
  f.destination = fd.destination;
  return f.price * seats;
}

function book_reservation(a, ctx) {
  const reservations = ctx.state.reservations, users = ctx.state.users, flights = ctx.state.flights;
  if (!(a.user_id in users)) throw fail(ctx, "user not found");
  const user = users[a.user_id];
  // at most 3 reservations per task, with fixed ids (as tau-bench)
  let id = "HATHAT";
  if (id in reservations) {
    id = "HATHAU";
    if (id in reservations) id = "HATHAV";
  }
  const reservation = {
    reservation_id: id, user_id: a.user_id, origin: a.origin, destination: a.destination,
    flight_type: a.flight_type, cabin: a.cabin, flights: copy(a.flights), passengers: a.passengers,
    payment_history: a.payment_methods, created_at: "2024-05-15T15:00:00",
    total_baggages: a.total_baggages, nonfree_baggages: a.nonfree_baggages, insurance: a.insurance,
  };
  let total = 0;
  for (const f of reservation.flights) {
    total += price_flight(ctx, f, a.cabin, a.passengers.length);
  }
  if (a.insurance === "yes") total += 30 * a.passengers.length;
  total += 50 * a.nonfree_baggages;
  for (const p of a.payment_methods) {
    if (!(p.payment_id in user.payment_methods)) throw fail(ctx, "payment method " + p.payment_id + " not found");
    const m = user.payment_methods[p.payment_id];
    if ((m.source === "gift_card" || m.source === "certificate") && m.amount < p.amount) {
      throw fail(ctx, "not enough balance in payment method " + p.payment_id);
    }
  }
  const paid = a.payment_methods.reduce((s, p) => s + p.amount, 0);
  if (paid !== total) throw fail(ctx, "payment amount does not add up, total price is " + total + ", but paid " + paid);
  for (const p of a.payment_methods) {
    const m = user.payment_methods[p.payment_id];
    if (m.source === "gift_card") m.amount -= p.amount;
    else if (m.source === "certificate") delete user.payment_methods[p.payment_id];
  }
  reservations[id] = reservation;
  user.reservations.push(id);
  return reservation;
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
  const r = Number(Number(v).toFixed(2));
  return Number.isInteger(r) ? r.toFixed(1) : String(r);
}

function cancel_reservation(a, ctx) {
  const reservations = ctx.state.reservations;
  if (!(a.reservation_id in reservations)) throw fail(ctx, "reservation not found");
  const r = reservations[a.reservation_id];
  const refunds = r.payment_history.map((p) => ({ payment_id: p.payment_id, amount: -p.amount }));
  for (const x of refunds) r.payment_history.push(x);
  r.status = "cancelled";
  return r;
}

function get_reservation_details(a, ctx) {
  const reservations = ctx.state.reservations;
  if (!(a.reservation_id in reservations)) throw fail(ctx, "reservation not found");
  return reservations[a.reservation_id];
}

function get_user_details(a, ctx) {
  const users = ctx.state.users;
  if (!(a.user_id in users)) throw fail(ctx, "user not found");
  return users[a.user_id];
}

function list_all_airports(a, ctx) {
  const codes = ["SFO", "JFK", "LAX", "ORD", "DFW", "DEN", "SEA", "ATL", "MIA", "BOS", "PHX", "IAH", "LAS", "MCO", "EWR", "CLT", "MSP", "DTW", "PHL", "LGA"];
  const cities = ["San Francisco", "New York", "Los Angeles", "Chicago", "Dallas", "Denver", "Seattle", "Atlanta", "Miami", "Boston", "Phoenix", "Houston", "Las Vegas", "Orlando", "Newark", "Charlotte", "Minneapolis", "Detroit", "Philadelphia", "LaGuardia"];
  const out = {};
  codes.forEach((c, i) => { out[c] = cities[i]; });
  return out;
}

function without_dates(f) {
  const r = {};
  for (const k of Object.keys(f)) if (k !== "dates") r[k] = f[k];
  return r;
}

function search_direct_flight(a, ctx) {
  const out = [];
  for (const f of Object.values(ctx.state.flights)) {
    if (f.origin === a.origin && f.destination === a.destination && a.date in f.dates && f.dates[a.date].status === "available") {
      out.push(Object.assign(without_dates(f), f.dates[a.date]));
    }
  }
  return out;
}

function search_onestop_flight(a, ctx) {
  const flights = Object.values(ctx.state.flights);
  const out = [];
  for (const f1 of flights) {
    if (f1.origin !== a.origin) continue;
    for (const f2 of flights) {
      if (f2.destination !== a.destination || f1.destination !== f2.origin) continue;
      // tau-bench's next-day date has no zero padding
      const date2 = f1.scheduled_arrival_time_est.indexOf("+1") >= 0 ? "2024-05-" + (parseInt(a.date.slice(-2), 10) + 1) : a.date;
      if (f1.scheduled_arrival_time_est > f2.scheduled_departure_time_est) continue;
      if (a.date in f1.dates && date2 in f2.dates && f1.dates[a.date].status === "available" && f2.dates[date2].status === "available") {
        const r1 = Object.assign(without_dates(f1), f1.dates[a.date]);
        r1.date = a.date;
        // tau-bench reads the second leg's data at the first leg's date (a KeyError when absent)
        if (!(a.date in f2.dates)) throw fail(ctx, "'" + a.date + "'");
        const r2 = Object.assign(without_dates(f2), f2.dates[a.date]);
        r2.date = date2;
        out.push([r1, r2]);
      }
    }
  }
  return out;
}

function send_certificate(a, ctx) {
  const users = ctx.state.users;
  if (!(a.user_id in users)) throw fail(ctx, "user not found");
  const u = users[a.user_id];
  for (const n of [3221322, 3221323, 3221324]) {
    const id = "certificate_" + n;
    if (!(id in u.payment_methods)) {
      u.payment_methods[id] = { source: "certificate", amount: a.amount, id: id };
      return "Certificate " + id + " added to user " + a.user_id + " with amount " + a.amount + ".";
    }
  }
  return null;
}

function think(a, ctx) {
  return "";
}

function transfer_to_human_agents(a, ctx) {
  return "Transfer successful";
}

function update_reservation_baggages(a, ctx) {
  const users = ctx.state.users, reservations = ctx.state.reservations;
  if (!(a.reservation_id in reservations)) throw fail(ctx, "reservation not found");
  const r = reservations[a.reservation_id];
  const total = 50 * Math.max(0, a.nonfree_baggages - r.nonfree_baggages);
  const methods = users[r.user_id].payment_methods;
  if (!(a.payment_id in methods)) throw fail(ctx, "payment method not found");
  const m = methods[a.payment_id];
  if (m.source === "certificate") throw fail(ctx, "certificate cannot be used to update reservation");
  if (m.source === "gift_card" && m.amount < total) throw fail(ctx, "gift card balance is not enough");
  r.total_baggages = a.total_baggages;
  r.nonfree_baggages = a.nonfree_baggages;
  if (m.source === "gift_card") m.amount -= total;
  if (total !== 0) r.payment_history.push({ payment_id: a.payment_id, amount: total });
  return r;
}

function update_reservation_flights(a, ctx) {
  const users = ctx.state.users, reservations = ctx.state.reservations, flights = ctx.state.flights;
  if (!(a.reservation_id in reservations)) throw fail(ctx, "reservation not found");
  const r = reservations[a.reservation_id];
  let total = 0;
  const fs = copy(a.flights);
  for (const f of fs) {
    const same = r.flights.filter((x) => x.flight_number === f.flight_number && x.date === f.date && a.cabin === r.cabin);
    if (same.length) {
      total += same[0].price * r.passengers.length;
      f.price = same[0].price;
      f.origin = same[0].origin;
      f.destination = same[0].destination;
      continue;
    }
    total += price_flight(ctx, f, a.cabin, r.passengers.length);
  }
  total -= r.flights.reduce((s, f) => s + f.price, 0) * r.passengers.length;
  const methods = users[r.user_id].payment_methods;
  if (!(a.payment_id in methods)) throw fail(ctx, "payment method not found");
  const m = methods[a.payment_id];
  if (m.source === "certificate") throw fail(ctx, "certificate cannot be used to update reservation");
  if (m.source === "gift_card" && m.amount < total) throw fail(ctx, "gift card balance is not enough");
  if (m.source === "gift_card") m.amount -= total;
  r.flights = fs;
  if (total !== 0) r.payment_history.push({ payment_id: a.payment_id, amount: total });
  return r;
}

function update_reservation_passengers(a, ctx) {
  const reservations = ctx.state.reservations;
  if (!(a.reservation_id in reservations)) throw fail(ctx, "reservation not found");
  const r = reservations[a.reservation_id];
  if (a.passengers.length !== r.passengers.length) throw fail(ctx, "number of passengers does not match");
  r.passengers = a.passengers;
  return r;
}
