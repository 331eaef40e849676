/* The flame graphs' script (html_flame.c writes it once, after the graphs): click a frame (or
 * Enter on it) to zoom into it, its callers kept whole-width and greyed above it; "Reset zoom"
 * or Escape to go back; a search box that colours the frames whose name holds its text and says
 * the share of samples under them. Inline and on its own (the page's other script is not
 * needed). The math is in pure functions, lanternFlame.zoom / label / search, which
 * tests/cpu/test_flame_script.py runs in node; they use only what the page's SVG carries
 * (each g.fr: data-s its first sample, data-n its samples, its rect's y, its name). */
#include "html/html_internal.h"

const char html_flame_script[] =
    "var lanternFlame=(function(){'use strict';\n"
    /* fr: frames {s,n,y}; returns per frame {x,w,st}: st 0 drawn (scaled so the focus spans
     * width), 1 a caller of the focus (whole width, greyed), 2 hidden. Zooming on the root
     * (y 0) gives the graph as drawn. */
    "function zoom(fr,focus,width){var f=fr[focus];return fr.map(function(g){\n"
    " var holds=g.s<=f.s&&g.s+g.n>=f.s+f.n;\n"
    " if(g.y<f.y)return holds?{x:0,w:width,st:1}:{x:0,w:0,st:2};\n"
    " if(g.s>=f.s&&g.s+g.n<=f.s+f.n)return{x:(g.s-f.s)*width/f.n,w:g.n*width/f.n,st:0};\n"
    " return{x:0,w:0,st:2};});}\n"
    /* a name cut to fit w pixels (11 px type: 6.5 px a character), as html_flame.c cuts it */
    "function label(name,w){var c=Math.floor((w-4)/6.5);if(c<3)return'';\n"
    " return name.length>c?name.slice(0,c-2)+'..':name;}\n"
    /* the frames whose name holds term (any case) and the samples under them: a match inside
     * another match counts once (the union of their sample spans) */
    "function search(fr,names,term){var t=term.toLowerCase(),hit=[],spans=[],samples=0,end=-1;\n"
    " names.forEach(function(nm,i){hit.push(t!==''&&nm.toLowerCase().indexOf(t)>=0);\n"
    "  if(hit[i])spans.push(fr[i]);});\n"
    " spans.sort(function(a,b){return a.s-b.s||b.n-a.n;});\n"
    " spans.forEach(function(g){var from=Math.max(g.s,end),to=g.s+g.n;\n"
    "  if(to>from){samples+=to-from;end=to;}});\n"
    " return{hit:hit,samples:samples};}\n"
    "function wire(svg){var W=svg.viewBox.baseVal.width,gs=[].slice.call(svg.querySelectorAll("
    "'g.fr')),\n"
    " fr=[],names=[],root=0,doc=svg.ownerDocument;\n"
    " var bar=doc.createElement('div'),reset=doc.createElement('button'),\n"
    "  box=doc.createElement('input'),said=doc.createElement('span');\n"
    " function show(f){zoom(fr,f,W).forEach(function(z,i){var g=gs[i],r=g.querySelector('rect'),"
    "t=g.querySelector('text');\n"
    "  if(z.st===2){g.setAttribute('display','none');return;}\n"
    "  g.removeAttribute('display');g.classList.toggle('anc',z.st===1);\n"
    "  r.setAttribute('x',z.x.toFixed(1));r.setAttribute('width',z.w.toFixed(1));\n"
    "  var cut=label(names[i],z.w);\n"
    "  if(!t&&cut){t=doc.createElementNS(svg.namespaceURI,'text');"
    "t.setAttribute('y',fr[i].y+12);g.appendChild(t);}\n"
    "  if(t){t.setAttribute('x',(z.x+2).toFixed(1));t.textContent=cut;}});\n"
    "  reset.disabled=f===root;svg.setAttribute('data-focus',f);}\n"
    " function find(){var m=search(fr,names,box.value),all=fr[root].n;\n"
    "  gs.forEach(function(g,i){g.classList.toggle('hit',m.hit[i]);});\n"
    "  said.textContent=box.value?'Matched: '+m.samples+' of '+all+' samples ('+"
    "(100*m.samples/all).toFixed(1)+' %)':'';}\n"
    " gs.forEach(function(g,i){var t=g.querySelector('text');\n"
    "  fr.push({s:+g.getAttribute('data-s'),n:+g.getAttribute('data-n'),"
    "y:+g.querySelector('rect').getAttribute('y')});\n"
    "  names.push(g.getAttribute('data-name')||(t?t.textContent:''));\n"
    "  if(fr[i].y===0)root=i;\n"
    "  g.setAttribute('tabindex','0');g.addEventListener('click',function(){show(i);});\n"
    "  g.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){"
    "e.preventDefault();show(i);}});});\n"
    " bar.className='flamebar';reset.type='button';reset.textContent='Reset zoom';"
    "reset.disabled=true;\n"
    " box.type='search';box.placeholder='Search frames';box.setAttribute('aria-label',"
    "'Search frames');\n"
    " bar.appendChild(reset);bar.appendChild(box);bar.appendChild(said);"
    "svg.parentNode.insertBefore(bar,svg);\n"
    " reset.addEventListener('click',function(){show(root);});\n"
    " box.addEventListener('input',find);\n"
    " box.addEventListener('keydown',function(e){if(e.key==='Escape'){e.stopPropagation();"
    "box.value='';find();}});\n"
    " svg.setAttribute('data-focus',root);return function(){show(root);};}\n"
    "if(typeof document!=='undefined'){\n"
    " var resets=[].map.call(document.querySelectorAll('svg.flame'),wire);\n"
    " document.addEventListener('keydown',function(e){if(e.key==='Escape')"
    "resets.forEach(function(r){r();});});}\n"
    "return{zoom:zoom,label:label,search:search};})();\n";
