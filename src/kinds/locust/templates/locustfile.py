"""Load test of an LLM inference server, for a LocustBenchmark blueprint of kubectl aiml.

Every setting comes from the environment the blueprint renders. The request and response
shape of each framework is in `request_for` and `output_text`, in one place:

- sax: the Saxml HTTP server (`sax-http`): POST {"model", "query", "extra_inputs"}, answered
  with a list of [text, score] pairs.
- tgi: Text Generation Inference: POST {"inputs", "parameters"}, answered {"generated_text"}.
- vllm: vLLM's API server: POST {"prompt", "max_tokens", ...}, answered {"text": [...]}, each
  text the prompt followed by the completion.
- triton and tensorrt_llm_triton: Triton's generate extension, POST {"text_input", ...} to
  /v2/models/<model>/generate, answered {"text_output"}.

Workers read the prompts from Cloud Storage, keep those the tokenizer finds short enough, and
publish one message per request to Pub/Sub when a topic is set (the `Metrics` schema of the
metrics sink). The master only coordinates.
"""

import datetime
import json
import logging
import os
import random
import time
import uuid

from locust import FastHttpUser, events, task
from locust.runners import MasterRunner

FRAMEWORK = os.environ["FRAMEWORK"]
REQUEST_PATH = os.environ["REQUEST_PATH"]
MODEL = os.environ.get("MODEL", "")
MAX_OUTPUT_LEN = int(os.environ.get("MAX_OUTPUT_LEN", "256"))
MAX_PROMPT_LEN = int(os.environ.get("MAX_PROMPT_LEN", "1024"))
MAX_PROMPTS = int(os.environ.get("MAX_PROMPTS", "1000"))
BEST_OF = int(os.environ.get("BEST_OF", "1"))
USE_BEAM_SEARCH = os.environ.get("USE_BEAM_SEARCH", "false") == "true"
TOKENIZER_NAME = os.environ.get("TOKENIZER", "")
PROMPTS_URI = os.environ.get("PROMPTS", "")
PUBSUB_TOPIC = os.environ.get("PUBSUB_TOPIC", "")
REQUEST_TIMEOUT = float(os.environ.get("REQUEST_TIMEOUT", "600"))
TEST_ID = os.environ.get("TEST_ID") or str(uuid.uuid4())

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("aiml-locust")

prompts = []
tokenizer = None
publisher = None


def request_for(framework, prompt):
    """The request body for one prompt."""
    temperature = 0.0 if USE_BEAM_SEARCH else 1.0
    if framework == "sax":
        return {
            "model": MODEL,
            "query": prompt,
            "extra_inputs": {
                "temperature": temperature,
                "per_example_max_decode_steps": MAX_OUTPUT_LEN,
            },
        }
    if framework == "tgi":
        return {
            "inputs": prompt,
            "parameters": {
                "best_of": BEST_OF,
                "max_new_tokens": MAX_OUTPUT_LEN,
                "do_sample": not USE_BEAM_SEARCH,
            },
        }
    if framework == "vllm":
        return {
            "prompt": prompt,
            "n": 1,
            "best_of": BEST_OF,
            "use_beam_search": USE_BEAM_SEARCH,
            "temperature": temperature,
            "top_p": 1.0,
            "max_tokens": MAX_OUTPUT_LEN,
            "ignore_eos": False,
            "stream": False,
        }
    if framework == "tensorrt_llm_triton":
        return {
            "text_input": prompt,
            "max_tokens": MAX_OUTPUT_LEN,
            "beam_width": BEST_OF if USE_BEAM_SEARCH else 1,
            "temperature": temperature,
            "top_p": 1.0,
            "bad_words": "",
            "stop_words": "",
            "stream": False,
        }
    if framework == "triton":
        return {"text_input": prompt, "parameters": {"max_tokens": MAX_OUTPUT_LEN}}
    raise ValueError(f"unknown framework {framework!r}")


def output_text(framework, prompt, body):
    """The generated text of a response body."""
    if framework == "sax":
        return body[0][0] if body else ""
    if framework == "tgi":
        return body["generated_text"]
    if framework == "vllm":
        text = body["text"][0]
        return text[len(prompt):] if text.startswith(prompt) else text
    if framework in ("tensorrt_llm_triton", "triton"):
        return body["text_output"]
    raise ValueError(f"unknown framework {framework!r}")


def count_tokens(text):
    if tokenizer is None:
        return len(text.split())
    return len(tokenizer.encode(text))


def read_prompts(uri):
    """Prompts from a gs:// object (or a local file, for trying the locustfile out): JSON
    lines (a `prompt`, `text` or `question` field) or plain lines."""
    if uri.startswith("gs://"):
        from google.cloud import storage

        bucket, _, name = uri.removeprefix("gs://").partition("/")
        text = storage.Client().bucket(bucket).blob(name).download_as_text()
    else:
        with open(uri, encoding="utf-8") as local:
            text = local.read()
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            record = json.loads(line)
            line = next((record[k] for k in ("prompt", "text", "question") if k in record), "")
        if line:
            found.append(line)
    return found


def hugging_face_token():
    """The token from the environment (a Kubernetes Secret) or from Secret Manager."""
    if os.environ.get("HF_TOKEN"):
        return os.environ["HF_TOKEN"]
    secret = os.environ.get("HF_TOKEN_SECRET")
    if not secret:
        return None
    from google.cloud import secretmanager

    response = secretmanager.SecretManagerServiceClient().access_secret_version(name=secret)
    return response.payload.data.decode("utf-8").strip()


@events.init.add_listener
def on_init(environment, **_kwargs):
    global tokenizer, publisher, prompts
    if isinstance(environment.runner, MasterRunner):
        return
    if TOKENIZER_NAME:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_NAME, token=hugging_face_token())
    candidates = read_prompts(PROMPTS_URI)
    prompts = [p for p in candidates if count_tokens(p) <= MAX_PROMPT_LEN][:MAX_PROMPTS]
    if not prompts:
        raise RuntimeError(f"no prompt of {PROMPTS_URI} has at most {MAX_PROMPT_LEN} tokens")
    log.info("%d of %d prompts fit %d tokens", len(prompts), len(candidates), MAX_PROMPT_LEN)
    if PUBSUB_TOPIC:
        from google.cloud import pubsub_v1

        publisher = pubsub_v1.PublisherClient()


def publish(record):
    if publisher is not None:
        publisher.publish(PUBSUB_TOPIC, json.dumps(record).encode("utf-8"))


class LanguageModelUser(FastHttpUser):
    connection_timeout = REQUEST_TIMEOUT
    network_timeout = REQUEST_TIMEOUT

    @task
    def generate(self):
        prompt = random.choice(prompts)
        body = request_for(FRAMEWORK, prompt)
        started = datetime.datetime.now(datetime.timezone.utc)
        clock = time.perf_counter()
        with self.client.post(
            REQUEST_PATH, json=body, name=FRAMEWORK, catch_response=True
        ) as response:
            elapsed_ms = (time.perf_counter() - clock) * 1000
            record = {
                "test_id": TEST_ID,
                "request_type": "POST",
                "request_name": FRAMEWORK,
                "response_length": len(response.content or b""),
                "response_time": elapsed_ms,
                "start_time": started.strftime("%Y-%m-%dT%H:%M:%S.%f"),
                "exception": "",
                "request": json.dumps(body),
                "model_name": MODEL,
                "model_method": "generate",
                "tokenizer": TOKENIZER_NAME,
                "num_input_tokens": count_tokens(prompt),
                "model_response_time": int(elapsed_ms),
            }
            try:
                if response.status_code != 200:
                    raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
                text = output_text(FRAMEWORK, prompt, response.json())
                record["response"] = json.dumps({"text": text})
                record["num_output_tokens"] = count_tokens(text)
                response.success()
            except Exception as error:  # noqa: BLE001 - any failure is the request's
                record["exception"] = str(error)
                response.failure(str(error))
            publish(record)
