// The serving fleet: every model in every region, in staging and prod: 2 x 2 x 2 = 8
// TritonServing blueprints from one file. Projects per environment come from aiml.yaml
// (jsonnet.extCode.projects). The output is an object: each key is a blueprint's name.
local serving = import 'lib/serving.libsonnet';
local projects = std.extVar('projects');

local models = {
  densenet: { name: 'densenet_onnx', gpu: 'nvidia-tesla-t4', gpus: 1 },
  llama3: {
    name: 'ensemble',
    framework: 'tensorrt_llm_triton',
    path: '/engines/llama-3-8b/',
    gpu: 'nvidia-l4',
    gpus: 2,
  },
};

{
  [std.join('-', [model, env, region])]:
    serving.triton(std.join('-', [model, env, region]), models[model], env, projects[env], region)
  for model in std.objectFields(models)
  for env in std.objectFields(projects)
  for region in std.objectFields(serving.regions)
}
