"""The project's development tools: scripts that serve its own development (the pages' screenshot
and benchmark, the generated runs their tests load), never imported by the suite itself (a
contract in pyproject.toml says so) and not part of its package."""
