"""``python -m conform.spec``: regenerate spec/schema.json from the loader's schema."""
import json
from pathlib import Path

from conform.spec import SCHEMA

path = Path(__file__).parent / "schema.json"
path.write_text(json.dumps(SCHEMA, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
print(f"wrote {path}")
