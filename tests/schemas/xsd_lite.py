"""A small XML Schema validator for the subset that tests/schemas/junit.xsd uses, so the JUnit test
needs no lxml: global elements (by name and ref), inline complex types (mixed or not), sequence and
choice with minOccurs/maxOccurs, attributes (allowed, required) and simple types restricted by a
pattern. Anything else in a schema raises NotImplementedError rather than passing silently."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

XS = "{http://www.w3.org/2001/XMLSchema}"
UNBOUNDED = -1


@dataclass
class Particle:
    kind: str  # "element", "sequence" or "choice"
    name: str = ""  # element name (for kind "element")
    children: list[Particle] = field(default_factory=list)
    low: int = 1
    high: int = 1  # UNBOUNDED for maxOccurs="unbounded"


@dataclass
class ElementType:
    simple: bool  # xs:string content: text only, no attributes
    mixed: bool = False
    attributes: dict[str, str] = field(default_factory=dict)  # name -> type
    required: set[str] = field(default_factory=set)
    content: Particle | None = None


class Schema:
    def __init__(self, path: Path) -> None:
        root = ElementTree.parse(path).getroot()
        self.patterns: dict[str, re.Pattern[str]] = {}
        self.elements: dict[str, ElementType] = {}
        for node in root:
            if node.tag == f"{XS}simpleType":
                pattern = node.find(f"{XS}restriction/{XS}pattern")
                if pattern is None:
                    raise NotImplementedError("simpleType without a pattern")
                self.patterns[node.get("name", "")] = re.compile(pattern.get("value", ""))
            elif node.tag == f"{XS}element":
                self.elements[node.get("name", "")] = self._element_type(node)
            elif not callable(node.tag):  # comments are fine
                raise NotImplementedError(node.tag)

    def _element_type(self, node: ElementTree.Element) -> ElementType:
        if node.get("type") == "xs:string":
            return ElementType(simple=True)
        complex_type = node.find(f"{XS}complexType")
        if complex_type is None:
            raise NotImplementedError(f"element {node.get('name')} without a type")
        result = ElementType(simple=False, mixed=complex_type.get("mixed") == "true")
        for child in complex_type:
            if child.tag == f"{XS}attribute":
                result.attributes[child.get("name", "")] = child.get("type", "xs:string")
                if child.get("use") == "required":
                    result.required.add(child.get("name", ""))
            elif child.tag in (f"{XS}sequence", f"{XS}choice"):
                result.content = _particle(child)
            elif not callable(child.tag):
                raise NotImplementedError(child.tag)
        return result

    def validate(self, root: ElementTree.Element) -> list[str]:
        errors: list[str] = []
        if root.tag not in self.elements:
            return [f"root element <{root.tag}> is not declared"]
        self._check(root, f"/{root.tag}", errors)
        return errors

    def _check(self, node: ElementTree.Element, where: str, errors: list[str]) -> None:
        declared = self.elements.get(node.tag)
        if declared is None:
            errors.append(f"{where}: element <{node.tag}> is not declared")
            return
        children = list(node)
        if declared.simple:
            if children or node.attrib:
                errors.append(f"{where}: text-only element has child elements or attributes")
            return
        for name, value in node.attrib.items():
            kind = declared.attributes.get(name)
            if kind is None:
                errors.append(f"{where}: attribute {name!r} is not allowed")
            elif kind in self.patterns and not self.patterns[kind].fullmatch(value):
                errors.append(f"{where}: attribute {name}={value!r} does not match type {kind}")
        errors += [f"{where}: missing required attribute {name!r}" for name in declared.required - set(node.attrib)]
        texts = [node.text or ""] + [child.tail or "" for child in children]
        if not declared.mixed and any(t.strip() for t in texts):
            errors.append(f"{where}: text is not allowed in <{node.tag}>")
        tags = [child.tag for child in children]
        if declared.content is None:
            if tags:
                errors.append(f"{where}: <{node.tag}> takes no child elements")
        elif len(tags) not in _match(declared.content, tags, 0):
            errors.append(f"{where}: children {tags} do not fit the content model of <{node.tag}>")
        for index, child in enumerate(children):
            self._check(child, f"{where}/{child.tag}[{index}]", errors)


def _particle(node: ElementTree.Element) -> Particle:
    high = node.get("maxOccurs", "1")
    occurs = {"low": int(node.get("minOccurs", "1")), "high": UNBOUNDED if high == "unbounded" else int(high)}
    if node.tag == f"{XS}element":
        if node.get("ref") is None:
            raise NotImplementedError("local element declarations (use ref)")
        return Particle("element", node.get("ref", ""), **occurs)
    kind = node.tag.removeprefix(XS)
    if kind not in ("sequence", "choice"):
        raise NotImplementedError(kind)
    return Particle(kind, children=[_particle(child) for child in node if not callable(child.tag)], **occurs)


def _match(particle: Particle, tags: list[str], start: int) -> set[int]:
    """Every position the particle can end at when it starts matching `tags` at `start`."""
    reached = {start} if particle.low == 0 else set()
    # Each repetition that matches something advances at least one tag, so this bound suffices.
    limit = particle.high if particle.high != UNBOUNDED else max(particle.low, len(tags) - start + 1)
    frontier = {start}
    for count in range(1, limit + 1):
        frontier = {end for position in frontier for end in _match_once(particle, tags, position)}
        if not frontier:
            break
        if count >= particle.low:
            reached |= frontier
    return reached


def _match_once(particle: Particle, tags: list[str], start: int) -> set[int]:
    if particle.kind == "element":
        return {start + 1} if start < len(tags) and tags[start] == particle.name else set()
    if particle.kind == "choice":
        return {end for child in particle.children for end in _match(child, tags, start)}
    positions = {start}
    for child in particle.children:
        positions = {end for position in positions for end in _match(child, tags, position)}
    return positions


def validate_file(xml_text: str, schema_path: Path) -> list[str]:
    return Schema(schema_path).validate(ElementTree.fromstring(xml_text))
