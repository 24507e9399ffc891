"""Issue 22, item 6: a file that cannot define `model` (or `example_inputs`) is refused when it is sent, where a
static reading can tell (nothing is run or queued); a file that may define it in any way Python allows is
queued, and the engine reports what it finds. The form's button and the README use one verb."""

import os

import pytest

from storage.config import PROJECT_ROOT
from tests.support import SEED, form_token
from webapp.submission import never_defined

NOT_DEFINED = {
    "no model at all": ("import torch\nnet = torch.nn.Linear(2, 2)\nexample_inputs = (torch.ones(2),)\n", ["model"]),
    "a class of another name": ("class Model:\n    pass\n", ["model", "example_inputs"]),
    "only a local of a function": ("def build():\n    x = 1\n    return x\nexample_inputs = ()\n", ["model"]),
    "only a use, never a binding": ("print(model)\nexample_inputs = ()\n", ["model"]),
    "an attribute read": ("import torch\nm = torch.model\nexample_inputs = ()\n", ["model"]),
}
MAY_DEFINE = {
    "assignment": "model = lambda x: x\nexample_inputs = ()\n",
    "def and a tuple target": "def model(x):\n    return x\nexample_inputs, other = (), 1\n",
    "class": "class model:\n    pass\nexample_inputs = ()\n",
    "import": "from zoo import model\nimport example_inputs\n",
    "import as": "import zoo.net as model\nfrom zoo import inputs as example_inputs\n",
    "inside if and try": "if True:\n    model = 1\ntry:\n    example_inputs = ()\nexcept Exception:\n    pass\n",
    "for and with": "for model in [1]:\n    pass\nwith open('x') as example_inputs:\n    pass\n",
    "walrus": "(model := 1)\n[example_inputs := i for i in range(2)]\n",
    "global in a function": "def setup():\n    global model, example_inputs\n    model = example_inputs = 1\nsetup()\n",
    "except as": "try:\n    pass\nexcept Exception as model:\n    pass\nexample_inputs = ()\n",
    "match capture": "match 1:\n    case model:\n        pass\nexample_inputs = ()\n",
    "star import": "from zoo import *\n",
    "globals()": "globals()['model'] = 1\nglobals().update(example_inputs=())\n",
    "exec": "exec('model = 1; example_inputs = ()')\n",
    "setattr on the module": "import sys\nsetattr(sys.modules[__name__], 'model', 1)\nexample_inputs = ()\n",
    "an attribute of the module": "import user_model\nuser_model.model = 1\nuser_model.example_inputs = ()\n",
    "vars()": "vars()['model'] = 1\nvars()['example_inputs'] = ()\n",
}


@pytest.mark.parametrize("code, missing", NOT_DEFINED.values(), ids=NOT_DEFINED)
def test_a_file_that_cannot_define_model_is_named(code, missing):
    assert never_defined(code) == missing


@pytest.mark.parametrize("code", MAY_DEFINE.values(), ids=MAY_DEFINE)
def test_a_file_that_may_define_model_in_any_way_is_not_refused(code):
    assert never_defined(code) == []


def test_every_gallery_example_passes():
    folder = os.path.join(PROJECT_ROOT, "examples")
    for name in os.listdir(folder):
        if name.endswith(".py"):
            with open(os.path.join(folder, name)) as f:
                assert never_defined(f.read()) == [], name


def test_the_form_and_the_api_refuse_it_at_once_and_queue_nothing(client, broker_messages):
    code = NOT_DEFINED["no model at all"][0]
    page = client.post("/", data={**form_token(client), "code": code, "configs": ["eager"]})
    assert page.status_code == 422
    text = page.get_data(as_text=True)
    assert "The file never defines `model`: add `model = ...`" in text
    assert "Nothing was run or queued" in text
    api = client.post("/api/runs", json={"code": code, "configs": ["eager"]})
    assert api.status_code == 400, api.get_json()
    assert "never defines `model`" in api.get_json()["errors"]["code"]
    assert broker_messages() == 0
    assert client.post("/api/runs", json={"code": SEED, "configs": ["eager"]}).status_code == 202


def test_the_button_says_what_the_readme_says(client):
    with open(os.path.join(PROJECT_ROOT, "README.md")) as f:
        readme = f.read()
    assert "press **Run**" in readme and "**Compile**" not in readme
    assert '<button type="submit" id="submit">Run</button>' in client.get("/").get_data(as_text=True)
