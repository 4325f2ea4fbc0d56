" Vim 9 + ALE reviewing an agent's hunks through `baton serve`, driven by
" tests/editors/test_vim.py:
"
"   vim -N -u <the snippet of docs/editors.md> -i NONE -n --not-a-term -c 'source review.vim' greet.py
"
" Everything goes through ALE: its diagnostics, `:ALECodeAction` (its number prompt,
" ale#util#Input, answered by title as a user would pick), the edit of a code action, `:write`
" and the didSave it sends. ALE cannot take `workspace/applyEdit`, so Accept records the
" decision and writes nothing; "Baton: Put in buffer" then puts the change in the buffer,
" and the save writes it. The script checks each step, writes a JSON report to
" $BATON_REPORT and exits 0 (`qall!`) or 1 (`cquit 1`).
"
" Environment: BATON_REPORT (where to write the report), BATON_TIMEOUT_MS (per wait).

let s:report_path = $BATON_REPORT
let s:timeout_ms = str2nr(empty($BATON_TIMEOUT_MS) ? '5000' : $BATON_TIMEOUT_MS)
let s:report = {'ok': v:false, 'vim': v:version, 'steps': [], 'menus': [], 'picked': []}

function! s:Step(name, data) abort
  call add(s:report.steps, {'name': a:name, 'data': a:data})
endfunction

function! s:WriteReport() abort
  call writefile([json_encode(s:report)], s:report_path)
endfunction

" Wait (bounded) until the expression is true; Vim runs ALE's job and channel callbacks
" while it sleeps.
function! s:WaitFor(what, expr) abort
  let l:start = reltime()
  while !eval(a:expr)
    if reltimefloat(reltime(l:start)) * 1000 > s:timeout_ms
      throw 'timed out after ' . s:timeout_ms . ' ms waiting for ' . a:what
    endif
    sleep 20m
  endwhile
endfunction

function! s:Check(cond, message) abort
  if !a:cond
    throw 'check failed: ' . a:message
  endif
endfunction

" --- what ALE shows ---------------------------------------------------------------------

function! s:Baton() abort
  let l:items = filter(copy(ale#engine#GetLoclist(bufnr(''))), 'v:val.linter_name is# "baton"')
  return map(l:items, '{"line": v:val.lnum, "code": get(v:val, "code", ""), "text": v:val.text}')
endfunction

function! s:At(line) abort
  let l:here = filter(s:Baton(), 'v:val.line == a:line')
  return empty(l:here) ? '' : l:here[0].text
endfunction

function! s:Linted() abort
  return getbufvar(bufnr(''), 'ale_linted', 0)
endfunction

" --- picking from :ALECodeAction -----------------------------------------------------------

" ALE lists the actions as "N) title" and reads the number with ale#util#Input. Load ALE's
" util.vim first, so that its own definition cannot replace this one afterwards.
runtime autoload/ale/util.vim
let g:baton_pick = ''

function! ale#util#Input(message, value, ...) abort
  call add(s:report.menus, split(a:message, "\n"))
  for l:line in split(a:message, "\n")
    let l:found = matchlist(l:line, '^\(\d\+\)) \(.*\)$')
    if !empty(l:found) && stridx(l:found[2], g:baton_pick) == 0
      call add(s:report.picked, l:found[2])
      let g:baton_pick = ''
      return l:found[1]
    endif
  endfor
  return ''
endfunction

function! s:CodeAction(line, title) abort
  call cursor(a:line, 1)
  let g:baton_pick = a:title
  let l:menus = len(s:report.menus)
  ALECodeAction
  call s:WaitFor('the code action menu', 'len(s:report.menus) > ' . l:menus)
  call s:Check(empty(g:baton_pick), 'no action "' . a:title . '" in ' . string(s:report.menus[-1]))
endfunction

function! s:Save() abort
  let l:linted = s:Linted()
  write
  " ALE sends didChange and didSave on BufWritePost; the server answers with diagnostics.
  call s:WaitFor('the diagnostics after the save', 's:Linted() > ' . l:linted)
endfunction

function! s:Store() abort
  return json_decode(system('baton hunks --json'))
endfunction

" --- the review ----------------------------------------------------------------------------

function! s:Review() abort
  call s:WaitFor('three proposals', 'len(s:Baton()) == 3')
  let l:shown = s:Baton()
  call s:Step('diagnostics', l:shown)
  let [l:hello, l:two, l:last] = map(copy(l:shown), 'v:val.line')

  " Accept: recorded, nothing written behind the buffer.
  call s:CodeAction(l:hello, 'Baton: Accept — ')
  call s:WaitFor('the accept', 's:At(' . l:hello . ') =~# "^Accepted, not in the file yet"')
  call s:Step('accepted', {'message': s:At(l:hello), 'buffer': getline(1, '$'),
  \ 'disk': readfile('greet.py', 'b')})

  " A save of the buffer as it is must not lose the accepted change.
  call s:Save()
  call s:Step('saved before put', {'message': s:At(l:hello), 'disk': readfile('greet.py', 'b'),
  \ 'store': s:Store()})

  " Put it in the buffer: the code action's own edit, applied by ALE.
  call s:CodeAction(l:hello, 'Baton: Put in buffer — ')
  call s:WaitFor('the edit in the buffer', 'getline(' . l:hello . ') =~# "世界"')
  call s:Step('put', {'buffer': getline(1, '$')})

  " The others: one rejected, the last line's accepted and put in too.
  let l:delta = line('$') - len(readfile('greet.py'))
  call s:CodeAction(l:two + l:delta, 'Baton: Reject — ')
  call s:WaitFor('the reject', 'len(s:Baton()) == 2')
  let l:last += l:delta
  call s:CodeAction(l:last, 'Baton: Accept — ')
  call s:WaitFor('the second accept', 's:At(' . l:last . ') =~# "^Accepted, not in the file yet"')
  call s:CodeAction(l:last, 'Baton: Put in buffer — ')
  call s:WaitFor('the second edit', 'getline(' . l:last . ') =~# "fin"')
  call s:Step('put last', {'buffer': getline(1, '$')})

  call s:Save()
  call s:WaitFor('both applied', 'len(filter(s:Baton(), "v:val.text =~# ''^Accepted, written''")) == 2')
  call s:Step('saved', {'diagnostics': s:Baton(), 'buffer': getline(1, '$'),
  \ 'disk': readfile('greet.py', 'b')})
endfunction

try
  call s:Review()
  let s:report.ok = v:true
catch
  let s:report.error = v:exception . ' at ' . v:throwpoint
  let s:report.shown = s:Baton()
endtry
call s:WriteReport()
if s:report.ok
  qall!
else
  cquit 1
endif
