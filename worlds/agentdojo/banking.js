// AgentDojo's banking suite, re-implemented from its documented tool semantics for gauntlet's
// script worlds. The state has AgentDojo's three parts: bank_account (balance, iban,
// transactions, scheduled_transactions), filesystem (files by path) and user_account.
// A refusal is a tool error the agent sees and changes nothing, as AgentDojo's raised errors do.

function fail(ctx, message) {
  return ctx.error(400, message);
}

// Python's str() of a float amount: integral values keep one decimal ("10.0").
function pyfloat(x) {
  return Number.isInteger(x) ? x.toFixed(1) : String(x);
}

function next_id(account) {
  const ids = account.transactions.map((t) => t.id).concat(account.scheduled_transactions.map((t) => t.id));
  return (ids.length ? Math.max.apply(null, ids) : 0) + 1;
}

function transaction(ctx, a, recurring) {
  const account = ctx.state.bank_account;
  return {
    id: next_id(account),
    sender: account.iban,
    recipient: a.recipient,
    amount: a.amount,
    subject: a.subject,
    date: a.date,
    recurring: recurring,
  };
}

function get_iban(a, ctx) {
  return ctx.state.bank_account.iban;
}

function send_money(a, ctx) {
  ctx.state.bank_account.transactions.push(transaction(ctx, a, false));
  return { message: "Transaction to " + a.recipient + " for " + pyfloat(a.amount) + " sent." };
}

function schedule_transaction(a, ctx) {
  ctx.state.bank_account.scheduled_transactions.push(transaction(ctx, a, a.recurring));
  return { message: "Transaction to " + a.recipient + " for " + pyfloat(a.amount) + " scheduled." };
}

// Only the given, truthy fields change (AgentDojo tests each with `if value:`).
function update_scheduled_transaction(a, ctx) {
  const t = ctx.state.bank_account.scheduled_transactions.find((t) => t.id === a.id);
  if (!t) throw fail(ctx, "Transaction with ID " + a.id + " not found.");
  for (const k of ["recipient", "amount", "subject", "date", "recurring"]) {
    if (a[k]) t[k] = a[k];
  }
  return { message: "Transaction with ID " + a.id + " updated." };
}

function get_balance(a, ctx) {
  return ctx.state.bank_account.balance;
}

// Python's `transactions[-int(n):]`: the last n (all of them for n = 0).
function get_most_recent_transactions(a, ctx) {
  const all = ctx.state.bank_account.transactions;
  const n = a.n === undefined || a.n === null ? 100 : Math.trunc(a.n);
  let start = -n;
  if (start < 0) start = Math.max(all.length + start, 0);
  return all.slice(Math.min(start, all.length));
}

function get_scheduled_transactions(a, ctx) {
  return ctx.state.bank_account.scheduled_transactions;
}

function read_file(a, ctx) {
  const files = ctx.state.filesystem.files;
  return Object.prototype.hasOwnProperty.call(files, a.file_path) ? files[a.file_path] : "";
}

function user_info(u) {
  return { first_name: u.first_name, last_name: u.last_name, street: u.street, city: u.city };
}

function get_user_info(a, ctx) {
  return user_info(ctx.state.user_account);
}

function update_password(a, ctx) {
  ctx.state.user_account.password = a.password;
  return { message: "Password updated." };
}

function update_user_info(a, ctx) {
  const u = ctx.state.user_account;
  for (const k of ["first_name", "last_name", "street", "city"]) {
    if (a[k]) u[k] = a[k];
  }
  return user_info(u);
}
