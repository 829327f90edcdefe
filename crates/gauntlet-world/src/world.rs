//! A world definition compiled for running: schemas compiled, handlers built.

use std::collections::HashMap;

use gauntlet_model::{ToolSpec, WorldSpec};
use jsonschema::Validator;

use crate::declarative::DeclarativeHandler;
use crate::handler::ToolHandler;

/// A problem in a world definition, naming the field at fault as a JSON Pointer
/// (`/tools/2/parameters`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct WorldError {
    /// JSON Pointer of the field at fault.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

pub(crate) struct CompiledTool {
    pub(crate) spec: ToolSpec,
    pub(crate) validator: Validator,
    pub(crate) handler: Box<dyn ToolHandler>,
}

/// A world's JavaScript: the file name shown in errors, and its source.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptSource {
    /// The file, as errors name it.
    pub file: String,
    /// The source text.
    pub source: String,
}

/// A world ready to run trials; built once, shared by every trial.
pub struct World {
    spec: WorldSpec,
    tools: HashMap<String, CompiledTool>,
    script: Option<ScriptSource>,
    /// Loaded states of the script, lent to trials (see [`crate::ScriptEngine::lend`]).
    pool: std::sync::Arc<crate::script::Pool>,
}

impl World {
    /// Compiles a world without a script (a `script:` in the spec is an error: see
    /// [`World::compile_with`]).
    pub fn compile(spec: WorldSpec) -> Result<World, Vec<WorldError>> {
        World::compile_with(spec, None)
    }

    /// Compiles every tool's schema and handler, and loads the script once to check it; reports
    /// every problem found.
    pub fn compile_with(
        spec: WorldSpec,
        script: Option<ScriptSource>,
    ) -> Result<World, Vec<WorldError>> {
        let mut errors = Vec::new();
        if spec.script.is_some() != script.is_some() {
            errors.push(WorldError {
                field: "/script".to_owned(),
                message: "the world names a script but its source was not loaded".to_owned(),
            });
        }
        if let Some(src) = &script {
            let probe = crate::script::ScriptEngine::new(
                &src.file,
                &src.source,
                &serde_json::json!({}),
                &Default::default(),
                0,
                "",
            );
            match probe {
                Err(e) => errors.push(WorldError {
                    field: "/script".to_owned(),
                    message: format!("the script does not load: {e}"),
                }),
                // A tool without declarative ops is answered by the script's function of its
                // name: one that is missing would fail every call with a 500 at run time.
                Ok(engine) => {
                    for (i, tool) in spec.tools.iter().enumerate() {
                        if tool.handler.is_empty()
                            && spec.service.is_none()
                            && !engine.defines(&tool.name)
                        {
                            errors.push(WorldError {
                                field: format!("/tools/{i}/name"),
                                message: format!(
                                    "tool `{}` has no handler: {} defines no function `{}` (and the tool has no declarative ops)",
                                    tool.name, src.file, tool.name
                                ),
                            });
                        }
                    }
                }
            }
        }
        if let Some(service) = &spec.service {
            use gauntlet_model::service::ServiceKind;
            let mut need = |ok: bool, field: &str, message: &str| {
                if !ok {
                    errors.push(WorldError {
                        field: format!("/service/{field}"),
                        message: message.to_owned(),
                    });
                }
            };
            match service.kind {
                ServiceKind::Directory | ServiceKind::Git | ServiceKind::Sqlite => need(
                    service.fixture.is_some(),
                    "fixture",
                    "a directory, git or sqlite service needs a `fixture`",
                ),
                ServiceKind::Command => need(
                    service.snapshot.is_some(),
                    "snapshot",
                    "a command service needs a `snapshot` command that prints its state as JSON",
                ),
            }
            need(
                spec.script.is_none(),
                "kind",
                "a world with a service has no script: the service answers its tools",
            );
        }
        let mut tools = HashMap::new();
        for (i, tool) in spec.tools.iter().enumerate() {
            if tools.contains_key(&tool.name) {
                errors.push(WorldError {
                    field: format!("/tools/{i}/name"),
                    message: format!("tool `{}` is defined twice", tool.name),
                });
                continue;
            }
            let validator = match jsonschema::validator_for(&tool.parameters) {
                Ok(v) => v,
                Err(e) => {
                    errors.push(WorldError {
                        field: format!("/tools/{i}/parameters"),
                        message: format!("invalid JSON Schema: {e}"),
                    });
                    continue;
                }
            };
            if spec.service.is_some() && !tool.handler.is_empty() {
                errors.push(WorldError {
                    field: format!("/tools/{i}/handler"),
                    message: format!(
                        "tool `{}` is answered by the world's service; drop its handler",
                        tool.name
                    ),
                });
            }
            if tool.handler.is_empty() && script.is_none() && spec.service.is_none() {
                errors.push(WorldError {
                    field: format!("/tools/{i}/handler"),
                    message: format!("tool `{}` has no handler: give it declarative ops, or a `script:` defining function {}", tool.name, tool.name),
                });
            }
            errors.extend(check_handler_paths(i, tool));
            let handler: Box<dyn ToolHandler> =
                Box::new(DeclarativeHandler::new(tool.handler.clone()));
            tools.insert(
                tool.name.clone(),
                CompiledTool {
                    spec: tool.clone(),
                    validator,
                    handler,
                },
            );
        }
        for (name, v) in &spec.injection_vectors {
            for (key, tool) in [("tool", &v.tool), ("description_of", &v.description_of)] {
                if let Some(tool) = tool
                    && !tools.contains_key(tool)
                {
                    errors.push(WorldError {
                        field: format!("/injection_vectors/{name}/{key}"),
                        message: format!("injection vector `{name}` names tool `{tool}`, which the world does not have"),
                    });
                }
            }
            if v.field.is_some() && v.tool.is_none() {
                errors.push(WorldError {
                    field: format!("/injection_vectors/{name}/field"),
                    message: "`field` points into a tool's output: give `tool` too".to_owned(),
                });
            }
        }
        if errors.is_empty() {
            Ok(World {
                spec,
                tools,
                script,
                pool: Default::default(),
            })
        } else {
            Err(errors)
        }
    }

    /// The definition.
    pub fn spec(&self) -> &WorldSpec {
        &self.spec
    }

    /// The world's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Whether the world has this tool.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Checks arguments against a tool's schema; the messages when they do not validate.
    pub fn validate_arguments(
        &self,
        tool: &str,
        args: &serde_json::Value,
    ) -> Result<(), Vec<String>> {
        let Some(t) = self.tools.get(tool) else {
            return Err(vec![format!("unknown tool `{tool}`")]);
        };
        let errors: Vec<String> = t
            .validator
            .iter_errors(args)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// The world's script, if it has one.
    pub fn script(&self) -> Option<&ScriptSource> {
        self.script.as_ref()
    }

    /// The loaded states of the world's script that wait for a trial.
    pub fn pool(&self) -> &std::sync::Arc<crate::script::Pool> {
        &self.pool
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&CompiledTool> {
        self.tools.get(name)
    }
}

/// Mistakes in a declarative handler's paths that would fail every call: a `{placeholder}` that
/// names no parameter of the tool (every call would answer 400 "missing argument"), and a JSON
/// Pointer with an escape other than `~0` or `~1`.
fn check_handler_paths(i: usize, tool: &ToolSpec) -> Vec<WorldError> {
    let declared = tool
        .parameters
        .get("properties")
        .and_then(|p| p.as_object());
    let mut errors = Vec::new();
    for (j, op) in tool.handler.iter().enumerate() {
        let Some(path) = op.path() else { continue };
        let field = format!("/tools/{i}/handler/{j}");
        for name in crate::declarative::placeholders(path) {
            let known = name == "context.user"
                || name == "context.tenant"
                || declared.is_none_or(|props| props.contains_key(name));
            if !known {
                let mut names: Vec<&str> = declared
                    .into_iter()
                    .flat_map(|p| p.keys().map(String::as_str))
                    .collect();
                names.extend(["context.user", "context.tenant"]);
                errors.push(WorldError {
                    field: field.clone(),
                    message: format!(
                        "path `{path}` uses `{{{name}}}`, which is not a parameter of tool `{}` \
                         (known: {}); every call would fail with \"missing argument\"",
                        tool.name,
                        names.join(", ")
                    ),
                });
            }
        }
        if path.starts_with('/') {
            let bad = path
                .match_indices('~')
                .any(|(at, _)| !matches!(path.as_bytes().get(at + 1), Some(b'0' | b'1')));
            if bad {
                errors.push(WorldError {
                    field,
                    message: format!(
                        "path `{path}` is not a valid JSON Pointer: `~` must be followed by 0 \
                         (for ~) or 1 (for /)"
                    ),
                });
            }
        }
    }
    errors
}
