// One Triton server of the fleet: a TritonServing blueprint for a model, in one environment
// and one region. Imported by ../fleet.jsonnet; a .libsonnet file is never a blueprint itself.
{
  // Where the fleet runs: a zone of each region that offers both T4 and L4 GPUs.
  regions:: {
    us: { region: 'us-central1', zone: 'us-central1-a' },
    eu: { region: 'europe-west4', zone: 'europe-west4-b' },
  },

  // How each environment sizes a server: staging scales to zero on spot VMs, prod keeps one.
  sizes:: {
    staging: { spot: true, minNodes: 0, maxNodes: 2 },
    prod: { spot: false, minNodes: 1, maxNodes: 4 },
  },

  triton(name, model, env, project, region):: {
    local where = $.regions[region],
    local size = $.sizes[env],
    apiVersion: 'aiml.dev/v1alpha1',
    kind: 'TritonServing',
    metadata: { name: name },
    spec: {
      project: project,
      region: where.region,
      zone: where.zone,
      gpu: { type: model.gpu, count: model.gpus },
      gpuPool: {
        autoscaling: { minNodes: size.minNodes, maxNodes: size.maxNodes },
        spot: size.spot,
      },
      model: { name: model.name } + (if 'framework' in model then { framework: model.framework, path: model.path } else {}),
      triton: { gpusPerPod: model.gpus },
      autoscaling: {
        minReplicas: std.max(size.minNodes, 1),
        maxReplicas: size.maxNodes,
        metric: 'gpuUtilization',
        targetUtilization: 80,
      },
    },
  },
}
