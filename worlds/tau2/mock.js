// tau2-bench's mock domain (a task list per user), re-implemented from
// src/tau2/domains/mock/tools.py for gauntlet's script worlds. The state is tau2's MockDB:
// {tasks: {task_id: {task_id, title, description, status}}, users: {user_id: {user_id, name, tasks}}}.
// A refusal is a tool error the agent sees; it never leaves a partial write.

function fail(ctx, message) {
  return ctx.error(400, "Error: " + message);
}

function create_task(a, ctx) {
  const users = ctx.state.users;
  if (!(a.user_id in users)) throw fail(ctx, "User " + a.user_id + " not found");
  const tasks = ctx.state.tasks;
  const task_id = "task_" + (Object.keys(tasks).length + 1);
  const task = {
    task_id: task_id,
    title: a.title,
    description: a.description === undefined ? null : a.description,
    status: "pending",
  };
  tasks[task_id] = task;
  users[a.user_id].tasks.push(task_id);
  return task;
}

function get_users(a, ctx) {
  return Object.values(ctx.state.users);
}

function update_task_status(a, ctx) {
  const tasks = ctx.state.tasks;
  if (!(a.task_id in tasks)) throw fail(ctx, "Task " + a.task_id + " not found");
  if (a.status !== "pending" && a.status !== "completed") {
    throw fail(ctx, "status must be 'pending' or 'completed'");
  }
  tasks[a.task_id].status = a.status;
  return tasks[a.task_id];
}

function transfer_to_human_agents(a, ctx) {
  return "Transfer successful";
}
