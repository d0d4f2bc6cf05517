"""The loop's basic contract: answers, tool calls, model mistakes, limits, runaways."""

from __future__ import annotations

from agent_support import kinds, make_agent, of_type, run_turn

from liveforge.declarations.agent import AgentSettings
from liveforge.impls.providers.pairing import pairing_problems
from liveforge.testing import fault, reply


def _sent_messages(fake) -> list[dict]:
    return fake.requests[-1].body["messages"]


def test_text_answer_streams_deltas_and_ends_with_final_answer(project, fake):
    """A plain answer arrives as text deltas, then FinalAnswer, then TurnEnded(answer)."""
    root, _ = project
    fake.add(reply.text("Hello there, all good.").chunked(4))
    agent = make_agent(root, fake)
    events = run_turn(agent, "hi")
    assert kinds(events)[0] == "turn_started"
    assert "".join(e.text for e in of_type(events, "text_delta")) == "Hello there, all good."
    assert of_type(events, "final_answer")[0].text == "Hello there, all good."
    assert events[-1].type == "turn_ended" and events[-1].reason == "answer"


def _tool_results(fake, index: int = -1) -> list[dict]:
    """The tool_result blocks of the newest user message of a recorded Anthropic request."""
    messages = fake.requests[index].body["messages"]
    return [
        b for b in messages[-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def test_tool_calls_run_and_their_results_go_back_to_the_model(project, fake):
    """inspect_module and view_source run through the toolbox; the next request carries
    their results, paired with the calls."""
    root, pkg = project
    fake.add(
        reply.tool_call("inspect_module", {"path": pkg, "depth": 2}).tool_call(
            "view_source", {"path": f"{pkg}.geometry.area"}
        ),
        reply.text("area() uses 3 as pi."),
    )
    agent = make_agent(root, fake)
    events = run_turn(agent, "look at area")
    finished = of_type(events, "tool_finished")
    assert [f.name for f in finished] == ["inspect_module", "view_source"]
    assert not any(f.is_error for f in finished)
    results = _tool_results(fake)
    assert "geometry" in results[0]["content"]
    assert "return 3 * radius * radius" in results[1]["content"]
    assert pairing_problems(agent.session.messages) == []


def test_the_loop_speaks_the_openai_protocol_too(project, fake):
    """Over chat completions the calls arrive as tool_calls and the results go back as
    role=tool messages answering them by id."""
    root, pkg = project
    fake.add(
        reply.tool_call("view_source", {"path": f"{pkg}.geometry.area"}, id="call_1"),
        reply.text("seen"),
    )
    agent = make_agent(root, fake, protocol="openai")
    events = run_turn(agent, "look")
    assert events[-1].reason == "answer"
    sent = fake.requests[-1].body["messages"]
    assert sent[0]["role"] == "system" and sent[2]["tool_calls"][0]["id"] == "call_1"
    assert sent[3]["role"] == "tool" and sent[3]["tool_call_id"] == "call_1"
    assert "return 3 * radius * radius" in sent[3]["content"]


def test_unknown_tool_and_bad_arguments_go_back_as_tool_errors(project, fake):
    """The model's mistakes are tool errors it can read; the turn goes on to an answer."""
    root, _ = project
    fake.add(
        reply.tool_call("no_such_tool", {}).tool_call("view_source", {"paht": "x"}),
        reply.text("sorry"),
    )
    agent = make_agent(root, fake)
    events = run_turn(agent, "do it")
    errors = [f for f in of_type(events, "tool_finished") if f.is_error]
    assert len(errors) == 2
    results = _tool_results(fake)
    assert all(r["is_error"] for r in results)
    assert "no tool named 'no_such_tool'" in results[0]["content"]
    assert events[-1].reason == "answer"


def test_step_limit_asks_for_an_answer_on_the_last_step_then_stops(project, fake):
    """The last allowed request says tool_choice none; tool calls in it are not run."""
    root, pkg = project
    call = reply.tool_call("view_source", {"path": f"{pkg}.geometry"})
    fake.add(reply.tool_call("history", {}), call)
    agent = make_agent(root, fake, settings=AgentSettings(max_steps=2))
    events = run_turn(agent, "loop")
    assert of_type(events, "turn_limit")[0].steps == 2
    assert events[-1].reason == "turn_limit"
    assert fake.requests[-1].body["tool_choice"] == {"type": "none"}
    assert "last step" in str(fake.requests[-1].body["system"])
    last = agent.session.messages[-1]
    assert last.role == "user" and "not run" in last.content[0].content
    assert pairing_problems(agent.session.messages, allow_open_last=False) == []


def test_runaway_repeat_is_stopped_and_the_model_is_told(project, fake):
    """The third identical call is not run; the turn ends with Runaway and the model reads
    why in that call's result on the next request."""
    root, pkg = project
    same = {"path": f"{pkg}.geometry.area"}
    fake.add(
        *[reply.tool_call("view_source", same) for _ in range(3)], reply.text("ok, I will stop.")
    )
    agent = make_agent(root, fake)
    events = run_turn(agent, "read it")
    assert of_type(events, "runaway")[0].repeats == 3
    assert events[-1].reason == "runaway"
    assert len(of_type(events, "tool_finished")) == 2
    run_turn(agent, "why did you stop?")
    results = [
        b
        for m in fake.requests[-1].body["messages"]
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert "Stopped: this is call number 3" in results[-1]["content"]


def test_a_change_between_identical_calls_is_not_a_runaway(project, fake):
    """Re-reading after a patch is legitimate: repeat counts reset when the program changes."""
    root, pkg = project
    same = {"path": f"{pkg}.geometry.area"}
    patch = {
        "path": f"{pkg}.geometry.area",
        "source": "def area(radius: float) -> float:\n    return 3.1 * radius * radius\n",
    }
    fake.add(
        reply.tool_call("view_source", same),
        reply.tool_call("view_source", same),
        reply.tool_call("patch", patch),
        reply.tool_call("view_source", same),
        reply.text("done"),
    )
    agent = make_agent(root, fake)
    events = run_turn(agent, "go")
    assert events[-1].reason == "answer"
    assert [p.target for p in of_type(events, "patch_applied")] == [f"{pkg}.geometry.area"]


def test_provider_failure_ends_the_turn_with_an_error_and_roles_stay_alternating(project, fake):
    """A provider error is an ErrorEvent, not an exception; the next input joins the
    unanswered one so the next request still alternates user and assistant."""
    root, _ = project
    fake.add(fault.bad_request("malformed on purpose"), reply.text("back"))
    agent = make_agent(root, fake)
    events = run_turn(agent, "first question")
    error = of_type(events, "error")[0]
    assert error.error_type == "BadRequestError" and events[-1].reason == "error"
    assert run_turn(agent, "second question")[-1].reason == "answer"
    sent = fake.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user"]
    assert [b["text"] for b in sent[0]["content"]] == ["first question", "second question"]
