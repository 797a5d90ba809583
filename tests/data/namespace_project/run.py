"""The script a project without packages runs from its root (its folders import as layers.X)."""
