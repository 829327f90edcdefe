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
            if let Err(e) = probe {
                errors.push(WorldError {
                    field: "/script".to_owned(),
                    message: format!("the script does not load: {e}"),
                });
            }
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
            if tool.handler.is_empty() && script.is_none() {
                errors.push(WorldError {
                    field: format!("/tools/{i}/handler"),
                    message: format!("tool `{}` has no handler: give it declarative ops, or a `script:` defining function {}", tool.name, tool.name),
                });
            }
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
        if errors.is_empty() {
            Ok(World {
                spec,
                tools,
                script,
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

    pub(crate) fn tool(&self, name: &str) -> Option<&CompiledTool> {
        self.tools.get(name)
    }
}
