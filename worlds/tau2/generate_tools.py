"""Tool schemas (OpenAI function form) from tau2-bench's toolkit source: the @is_tool methods,
their signatures and Google-style docstrings."""
import ast, json, re, sys

def schema_of(ann):
    s = ast.unparse(ann) if ann is not None else "str"
    if s in ("str",): return {"type": "string"}
    if s in ("int",): return {"type": "integer"}
    if s in ("float",): return {"type": "number"}
    if s in ("bool",): return {"type": "boolean"}
    if s == "TaskStatus": return {"type": "string", "enum": ["pending", "completed"]}
    m = re.fullmatch(r"(?:List|list)\[(\w+)\]", s)
    if m: return {"type": "array", "items": schema_of(ast.parse(m.group(1), mode="eval").body)}
    raise SystemExit(f"unknown annotation {s}")

def parse_doc(doc):
    lines = doc.splitlines()
    desc, args, section, cur, arg_indent = [], {}, None, None, None
    for raw in lines:
        line = raw.strip()
        if line in ("Args:", "Returns:", "Raises:"):
            section = line[:-1]; continue
        if section is None:
            if line: desc.append(line)
        elif section == "Args":
            indent = len(raw) - len(raw.lstrip())
            if arg_indent is None and line: arg_indent = indent
            m = re.match(r"(\w+)(?: \([^)]*\))?: (.*)", line)
            if m and indent == arg_indent:
                cur = m.group(1); args[cur] = m.group(2)
            elif cur and line:
                args[cur] += " " + line
    return " ".join(desc), args

src = open(sys.argv[1]).read()
WRITES = set(sys.argv[2].split(","))
tree = ast.parse(src)
tools = []
for node in ast.walk(tree):
    if isinstance(node, ast.FunctionDef) and any(
        isinstance(d, ast.Call) and ast.unparse(d.func) == "is_tool" for d in node.decorator_list):
        kind = ast.unparse(node.decorator_list[0].args[0]).split(".")[-1]
        desc, argdocs = parse_doc(ast.get_docstring(node) or "")
        params = [a for a in node.args.args if a.arg != "self"]
        defaults = [None] * (len(params) - len(node.args.defaults)) + node.args.defaults
        props, required = {}, []
        for a, d in zip(params, defaults):
            p = schema_of(a.annotation)
            if a.arg in argdocs: p["description"] = argdocs[a.arg]
            props[a.arg] = p
            if d is None: required.append(a.arg)
        tools.append({"name": node.name, "kind": "write" if node.name in WRITES else "read",
                      "description": desc,
                      "parameters": {"type": "object", "properties": props, "required": required}})
print(json.dumps({"name": sys.argv[3], "description": sys.argv[4], "tools": tools}, indent=2))
