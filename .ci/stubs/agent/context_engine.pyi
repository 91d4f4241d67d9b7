from contextlab.engine import ContextEngine as ContextEngine
