"""Translation memories (#51): what people already translated, matched before the engine."""
