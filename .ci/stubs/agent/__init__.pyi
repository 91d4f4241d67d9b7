# Type stub for the real host's ``agent`` package, so mypy can check the bundled plugins (which import
# ``agent.context_engine`` as the host requires) without Hermes installed. At run time contextlab's
# import shim or a real Hermes install provides the module.
